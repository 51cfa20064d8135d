"""The chaos soak of ``tracescore serve`` (``make soak``, ``python -m tests.soak``): continuous load over
OTLP/HTTP and Kafka while a seeded schedule of faults runs (SIGKILLs, a full disk, a huge request, slow
clients, a failing and a hanging judge, a flood, malformed input), then the store is read and each
criterion printed as PASS or FAIL. Its pure parts (the schedule, the criteria) have unit tests here."""
