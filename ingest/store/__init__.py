"""The store: one ClickHouse client (``clickhouse``), the span sink and the score sink over it, and the
row shapes of the tables (``rows``). The DDL lives in ``schemas/sql``."""
