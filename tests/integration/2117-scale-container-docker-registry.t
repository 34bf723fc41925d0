#!/bin/sh
# 2110 (an image pulled from a private registry with TLS and basic auth,
# with the credentials of registry_auth_file sent as X-Registry-Auth,
# pinned to its digest; a wrong password refused, the right one pulled)
# against a real Docker engine (scripts/docker-engine, or one of the
# test's own), which trusts the test CA through
# /etc/docker/certs.d/127.0.0.1:PORT/ (lib/registry.sh).
CT_ENGINE=docker
. tests/integration/2110-scale-container-registry.t
