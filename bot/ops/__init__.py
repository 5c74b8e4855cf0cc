"""The ground floor of the service: the configuration, the API token, logging, systemd's
notify protocol, the stop signals, and the small state files kept between runs. It imports
no other part of the bot but `bot.lichess`."""
