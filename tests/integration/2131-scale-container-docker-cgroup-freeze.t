#!/bin/sh
# 2130 (idle_action = "suspend": the container's own cgroup frozen and
# thawed by hk-scale, the engine being local; adopted frozen after a
# SIGKILL; a stop of a frozen container thawed first) against a real
# Docker engine (scripts/docker-engine, or one of the test's own): the
# same checks, on the host's network (lib/ct.sh), on both stores.
CT_ENGINE=docker
. tests/integration/2130-scale-container-cgroup-freeze.t
