"""Receiving spans (OTLP gRPC/HTTP, Kafka), decoding, trace assembly, convention adapters, the store."""
