#!/bin/sh
# 2101 (the container backend end to end: seed 000's example, wake,
# sleep, three POSTs, a pull that fails, readiness by the image's
# HEALTHCHECK, a container killed behind hk-scale's back, hk stop, a new
# revision) against a real Docker engine (scripts/docker-engine, or one
# of the test's own): the same checks, on the host's network (lib/ct.sh).
CT_ENGINE=docker
. tests/integration/2101-scale-container.t
