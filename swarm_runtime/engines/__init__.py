"""Step engines: the interface, the registry and the built-in engines."""
