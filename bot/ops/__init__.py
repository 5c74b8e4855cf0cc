"""Running the service: the configuration, the API token, logging, the status view, systemd's
notify protocol, and the small state files kept between runs."""
