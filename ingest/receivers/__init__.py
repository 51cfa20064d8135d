"""OTLP receivers, one per transport: gRPC (``grpc``), HTTP with the API beside it (``http``), and Kafka
(``kafka``). The request-driven ones share one export step (``export``); all decode through
``ingest.decode``."""
