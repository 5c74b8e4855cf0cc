"""The engines wing: the pool of UCI engine processes (`pool`), the built-in engine's host that
forks them (`host`), the rules that pick an engine for a game (`rules`), the set of configured
engines (`engineset`), and the memory they are expected to take (`memory`)."""
