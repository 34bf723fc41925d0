#!/bin/sh
# 2109 (a container service's named volume: written, stopped, started,
# a new revision, hk-scale killed and its container adopted, read back
# each time; hk volumes; bind mounts) against a real Docker engine
# (scripts/docker-engine, or one of the test's own), on SQLite and
# PostgreSQL: the same checks, on the host's network, the volume at the
# image's /tmp (lib/ct.sh, 2109's VOL_AT).
CT_ENGINE=docker
. tests/integration/2109-scale-container-volumes.t
