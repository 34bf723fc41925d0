# lib/registry.sh - sourced after lib.sh and lib/ct.sh: an image registry
# of the test's own on loopback (MACHINE-NOTES.md): Debian's
# docker-registry on 127.0.0.1:$REG_PORT, TLS from a test CA made here
# with openssl, htpasswd basic auth (one user, $REG_USER/$REG_PASS).
# podman trusts the CA through /etc/containers/certs.d/127.0.0.1:PORT/,
# which the podman API service reads at each pull, and Docker (for
# CT_ENGINE=docker) through /etc/docker/certs.d/127.0.0.1:PORT/, which
# dockerd reads at each pull too: it has no option to look elsewhere (its
# certs.d moves only in rootless mode).  Each directory is the test's own
# (its port, by exact path) and goes at exit, as the registry (by its
# PID) and the images the test pulled (by ID, reg_forget).

# reg_start: $REG (host:port), $REG_PID, $REG_USER, $REG_PASS, $REG_CA.
reg_start() {
	for _t in docker-registry htpasswd openssl; do
		command -v "$_t" >/dev/null || {
			diag "$_t is not installed (scripts/deps)"
			return 1
		}
	done
	_r=$T/registry
	mkdir -p "$_r/data"
	REG_PORT=$(free_port)
	REG=127.0.0.1:$REG_PORT
	REG_USER=hkuser
	REG_PASS=$(python3 -c 'import secrets; print("hk-reg-" + secrets.token_hex(12))')
	REG_CA=$_r/ca.crt
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=hk-test-ca \
	    -keyout "$_r/ca.key" -out "$REG_CA" 2>/dev/null &&
	openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 \
	    -keyout "$_r/reg.key" -out "$_r/reg.csr" 2>/dev/null &&
	printf 'subjectAltName=IP:127.0.0.1\n' >"$_r/ext" &&
	openssl x509 -req -in "$_r/reg.csr" -CA "$REG_CA" -CAkey "$_r/ca.key" \
	    -CAcreateserial -days 1 -extfile "$_r/ext" \
	    -out "$_r/reg.crt" 2>/dev/null &&
	htpasswd -Bbc "$_r/htpasswd" "$REG_USER" "$REG_PASS" 2>/dev/null ||
	    return 1
	cat >"$_r/config.yml" <<REGCONF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $_r/data
http:
  addr: $REG
  tls:
    certificate: $_r/reg.crt
    key: $_r/reg.key
auth:
  htpasswd:
    realm: hk-test
    path: $_r/htpasswd
REGCONF
	REG_CERTS=/etc/containers/certs.d/$REG
	mkdir -p "$REG_CERTS" && cp "$REG_CA" "$REG_CERTS/ca.crt" || return 1
	if [ "$CT_ENGINE" = docker ]; then
		REG_CERTS_DOCKER=/etc/docker/certs.d/$REG
		mkdir -p "$REG_CERTS_DOCKER" &&
		    cp "$REG_CA" "$REG_CERTS_DOCKER/ca.crt" || return 1
	fi
	docker-registry serve "$_r/config.yml" >>"$T/registry.log" 2>&1 &
	REG_PID=$!
	_pids="$_pids $REG_PID"
	wait_t 30 curl -sf --cacert "$REG_CA" -u "$REG_USER:$REG_PASS" \
	    "https://$REG/v2/" -o /dev/null
}

# reg_push SRC NAME: podman pushes the local image SRC as $REG/NAME.
reg_push() {
	podman push -q --creds "$REG_USER:$REG_PASS" "$1" "$REG/$2" \
	    >>"$T/registry.log" 2>&1
}

# reg_digest NAME:TAG: the digest the registry serves for that tag.
reg_digest() {
	curl -sf --cacert "$REG_CA" -u "$REG_USER:$REG_PASS" -o /dev/null \
	    -D - -H 'Accept: application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json' \
	    "https://$REG/v2/${1%:*}/manifests/${1##*:}" |
	    tr -d '\r' | sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: //p'
}

# reg_forget REF...: removes those images from podman's store (where the
# test builds them), by ID.
REG_IMAGES=
reg_forget() {
	for _ref in "$@"; do
		_id=$(podman image inspect --format '{{.Id}}' "$_ref" 2>/dev/null) ||
		    continue
		podman rmi -f "$_id" >/dev/null 2>&1
	done
}

# reg_image_of ID: "IMAGE-ID NAME" of a container: the image it runs (the
# ID without Docker's "sha256:") and the name it was created from.
reg_image_of() {
	ct_inspect "$1" '{{.Image}} {{.Config.Image}}' | sed 's/^sha256://'
}

reg_cleanup() {
	[ -n "${REG_PID:-}" ] && kill "$REG_PID" 2>/dev/null
	[ -n "${REG_CERTS:-}" ] && rm -rf "$REG_CERTS"
	[ -n "${REG_CERTS_DOCKER:-}" ] && rm -rf "$REG_CERTS_DOCKER"
	for _i in $REG_IMAGES; do
		podman rmi -f "$_i" >/dev/null 2>&1
		[ "$CT_ENGINE" = docker ] && ct_cli rmi -f "$_i" >/dev/null 2>&1
	done
}
trap 'reg_cleanup; ct_cleanup; _cleanup' EXIT
