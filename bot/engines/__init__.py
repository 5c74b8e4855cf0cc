"""The engines wing: the pool of UCI engine processes (`pool`), the built-in engine's host that
forks them (`host`), the rules that pick an engine for a game (`rules`), the set of configured
engines (`engineset`), the memory they are expected to take (`memory`), and how a search line
reads, its PV in SAN and its score (`searchline`)."""
