"""The report: a self-contained HTML page of what the store holds (``tracescore report``, ``GET /report``)."""
