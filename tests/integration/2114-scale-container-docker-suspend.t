#!/bin/sh
# 2107 (idle_action = "suspend": the engine's pause and unpause, and the
# adoption of a paused container by an hk-scale killed with SIGKILL)
# against a real Docker engine (scripts/docker-engine, or one of the
# test's own): the same checks, on the host's network (lib/ct.sh).
CT_ENGINE=docker
. tests/integration/2107-scale-container-suspend.t
