"""Helpers the tests share: fixture files, a local judge server, a broker, a store, OTLP senders."""
