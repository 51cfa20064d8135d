-- The replicas of one deployment sharing this store: each writes a heartbeat every few seconds, and
-- a replica is live while its last heartbeat is recent and it has not left. Ownership of traces is a
-- rendezvous hash of the trace id over the live replicas (ingest/replication/membership.py). State is 'live',
-- 'left' (shut down cleanly, its work handed off) or 'retired' (it died and a survivor took over).

CREATE TABLE IF NOT EXISTS {database}.replicas (
    ReplicaId String,
    Heartbeat DateTime64(9, 'UTC'),
    Started DateTime64(9, 'UTC'),
    State LowCardinality(String)
) ENGINE = ReplacingMergeTree(Heartbeat)
ORDER BY ReplicaId;
