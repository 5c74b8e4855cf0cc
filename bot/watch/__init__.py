"""The status page, /metrics and /healthz: what the running bot shows of itself over HTTP.

`server` serves them with aiohttp on the bot's own loop; `status` is the one-line
summary in the log and the live view on a terminal; `view` turns the bot's state into
plain data, `feed` sends its changes to the open pages as server-sent events, `prometheus`
exposes the counters, `proctree` measures memory and `warnings` keeps the latest warnings.
"""
