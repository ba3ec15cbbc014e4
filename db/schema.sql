-- fusedtune results database, schema version 1.
--
-- This script creates a version-1 database from nothing; db.c runs it in one transaction on an
-- empty file. Later versions are reached by the ordered migration steps in src/db/db_open.c (version N ->
-- N + 1), never by editing this file's meaning. Column meanings: docs/FORMAT.md.
--
-- Times are milliseconds; NULL means "not measured". Timestamps are ISO-8601 UTC text
-- ("2026-11-29T08:44:10.123Z"), which sorts chronologically as text.

-- Marks the file as fusedtune's (besides PRAGMA application_id), so a database is recognized even
-- by a tool that only reads tables.
CREATE TABLE meta (
  key   TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
);
INSERT INTO meta (key, value) VALUES ('application', 'fusedtune');

-- The silicon: the fingerprint hashes name, compute capability, SM count and memory. The version
-- columns are validators recorded when the device was last seen.
CREATE TABLE devices (
  id              INTEGER PRIMARY KEY,
  fingerprint     TEXT NOT NULL UNIQUE,
  name            TEXT NOT NULL,
  cc_major        INTEGER NOT NULL,
  cc_minor        INTEGER NOT NULL,
  sm_count        INTEGER NOT NULL,
  mem_bytes       INTEGER NOT NULL,
  driver_version  INTEGER NOT NULL,
  runtime_version INTEGER NOT NULL,
  nvrtc_version   INTEGER NOT NULL,
  cublas_version  INTEGER NOT NULL,
  first_seen      TEXT NOT NULL,
  last_seen       TEXT NOT NULL
);

-- The problem key: shape, layouts, math mode and the canonical epilogue (its hash is the key).
CREATE TABLE problems (
  id            INTEGER PRIMARY KEY,
  m             INTEGER NOT NULL CHECK (m > 0),
  n             INTEGER NOT NULL CHECK (n > 0),
  k             INTEGER NOT NULL CHECK (k > 0),
  layout        TEXT NOT NULL,
  math          TEXT NOT NULL,
  epilogue      TEXT NOT NULL,
  epilogue_hash TEXT NOT NULL,
  UNIQUE (m, n, k, layout, math, epilogue_hash)
);
-- Nearest-shape lookup walks every shape tuned for one epilogue.
CREATE INDEX problems_by_epilogue ON problems (epilogue_hash, math);

-- One tuning session. ended and outcome stay NULL while it runs (or if it crashed).
CREATE TABLE runs (
  id           INTEGER PRIMARY KEY,
  uuid         TEXT NOT NULL UNIQUE,
  device_id    INTEGER NOT NULL REFERENCES devices (id),
  started      TEXT NOT NULL,
  ended        TEXT,
  tool_version TEXT NOT NULL,
  options      TEXT NOT NULL,
  budget_s     REAL NOT NULL,
  outcome      TEXT
);

-- Every measured candidate, whatever its status. Rows are only ever added.
CREATE TABLE results (
  id                INTEGER PRIMARY KEY,
  uuid              TEXT NOT NULL UNIQUE,
  run_id            INTEGER REFERENCES runs (id),
  device_id         INTEGER NOT NULL REFERENCES devices (id),
  problem_id        INTEGER NOT NULL REFERENCES problems (id),
  strategy          TEXT NOT NULL,
  variant           TEXT NOT NULL,
  config            TEXT NOT NULL,
  status            TEXT NOT NULL
                    CHECK (status IN ('ok', 'compile_error', 'wrong_result', 'launch_error', 'timeout')),
  median_ms         REAL,
  min_ms            REAL,
  iqr_ms            REAL,
  repeats           INTEGER NOT NULL CHECK (repeats >= 0),
  rel_err           REAL,
  max_abs_err       REAL,
  source_hash       TEXT NOT NULL,
  fusedtune_version TEXT NOT NULL,
  message           TEXT NOT NULL,
  created           TEXT NOT NULL
);
-- "Was this already measured?" (tune without --retune) and per-problem scans.
CREATE INDEX results_by_key ON results (device_id, problem_id, strategy, source_hash, config);
CREATE INDEX results_by_run ON results (run_id);
-- The best candidate of a (device, problem) is the first entry of this partial index: the
-- lookup is one index seek. (Version 2 replaces it with results_best_rank, in the order of the
-- rank: src/db/db_open.c.) The WHERE must stay textually identical to the one in the view
-- and in db.c, or SQLite will not use the index.
CREATE INDEX results_best ON results (device_id, problem_id, median_ms, created, uuid)
  WHERE status = 'ok' AND strategy IN ('fused', 'cublas+epilogue') AND median_ms IS NOT NULL;
-- The eager baseline (latest first) for the speedup shown beside the best.
CREATE INDEX results_eager ON results (device_id, problem_id, created, uuid)
  WHERE status = 'ok' AND strategy = 'eager' AND median_ms IS NOT NULL;

-- Derived, never edited (schema version 2 replaces this view: its migration step in
-- src/db/db_open.c ranks by results.gemm_ratio). Here, in version 1: per (device, problem) the
-- correct launchable result with the lowest median; ties go to the earlier created, then the smaller uuid, so every copy of the same data
-- agrees. device_id and problem_id come from g so that a WHERE on them is pushed into g (one
-- index range) instead of scanning every best.
CREATE VIEW best AS
SELECT r.id, r.uuid, r.run_id, g.device_id, g.problem_id, r.strategy, r.variant, r.config,
       r.status, r.median_ms, r.min_ms, r.iqr_ms, r.repeats, r.rel_err, r.max_abs_err,
       r.source_hash, r.fusedtune_version, r.message, r.created
FROM (SELECT DISTINCT device_id, problem_id FROM results
      WHERE status = 'ok' AND strategy IN ('fused', 'cublas+epilogue') AND median_ms IS NOT NULL) AS g
JOIN results AS r ON r.id = (
  SELECT r2.id FROM results AS r2
  WHERE r2.device_id = g.device_id AND r2.problem_id = g.problem_id
    AND r2.status = 'ok' AND r2.strategy IN ('fused', 'cublas+epilogue') AND r2.median_ms IS NOT NULL
  ORDER BY r2.median_ms, r2.created, r2.uuid
  LIMIT 1);

-- Compiled kernels, so a program launching a tuned kernel does not pay NVRTC again.
CREATE TABLE cubins (
  source_hash   TEXT NOT NULL,
  arch          TEXT NOT NULL,
  nvrtc_version INTEGER NOT NULL,
  options       TEXT NOT NULL,
  data          BLOB NOT NULL,
  size          INTEGER NOT NULL CHECK (size = length(data)),
  created       TEXT NOT NULL,
  PRIMARY KEY (source_hash, arch, nvrtc_version, options)
);

-- 'FTUN': lets `file` and other tools tell a fusedtune database from any other SQLite file.
PRAGMA application_id = 1179931982;
PRAGMA user_version = 1;
