#!/bin/sh
# 2102 (hk-scale killed with SIGKILL beside its containers, on SQLite and
# PostgreSQL: the running container adopted, the starting one removed,
# nothing left over) against a real Docker engine (scripts/docker-engine,
# or one of the test's own): the same checks, on the host's network
# (lib/ct.sh).
CT_ENGINE=docker
. tests/integration/2102-scale-container-restart.t
