# hk - one non-recursive Makefile.
#
#	make			programs (runs scripts/deps first)
#	make check		every test; SANITIZE=1 for ASan + UBSan
#	make install		PREFIX=/usr/local SYSCONFDIR=/etc DESTDIR=
#	make fuzz		libFuzzer harnesses (clang); FUZZ_SECONDS=60
#	make lint		mandoc -Tlint on every page
#	make demo		the example applied and shown
#	make bench		hk beside HAProxy and nginx (BENCH=--quick)
#
# Variables are expanded lazily (=, not :=) so pkg-config runs only after
# scripts/deps has installed the -dev packages.

# make splits words at spaces: a checkout whose path has one cannot be
# built, and is refused before anything runs.
ifneq ($(words $(CURDIR)),1)
$(error the checkout's path has a space ($(CURDIR)): make cannot build \
there; clone hk into a path without one)
endif

PREFIX ?=	/usr/local
DESTDIR ?=
BINDIR =	$(PREFIX)/bin
# Programs that hk's daemons run, not a user (hk-listen, hk-hold,
# hk-python-template, hk-node-spare: hk-scale(8)).
LIBEXECDIR =	$(PREFIX)/libexec/hk
LIBEXEC_PROGS =	hk-listen hk-hold
LIBEXEC_SCRIPTS = hk-python-template hk-node-spare
MANDIR =	$(PREFIX)/share/man
EXAMPLEDIR =	$(PREFIX)/share/hk
UNITDIR =	$(PREFIX)/lib/systemd/system
SYSCONFDIR ?=	/etc
# The daemons' user (hk(7)); make install creates it when DESTDIR is empty.
USERADD =	useradd --system --user-group --home-dir /var/lib/hakopod \
		    --no-create-home --shell /usr/sbin/nologin hakopod

PKGS =		libpq libcurl jansson libbsd-overlay sqlite3 libsystemd libsodium \
		yaml-0.1
WARN =		-Wall -Wextra -Wformat=2 -Wshadow -Wmissing-prototypes \
		-Wno-format-nonliteral -Werror
ifeq ($(SANITIZE),1)
BUILD ?=	build/san
SANFLAGS =	-fsanitize=address,undefined -fno-omit-frame-pointer \
		-fno-sanitize-recover=undefined
OPT ?=		-O1 -g
else
BUILD ?=	build/rel
SANFLAGS =
OPT ?=		-O2 -g
endif

CC ?=		cc
HK_CFLAGS =	-std=c11 -D_GNU_SOURCE $(OPT) $(WARN) $(SANFLAGS) -Ilib \
		$(shell pkg-config --cflags $(PKGS)) $(CFLAGS)
HK_LDFLAGS =	$(SANFLAGS) $(LDFLAGS)
# libpq is not linked: lib/pq.c opens it when a store is PostgreSQL.
# libsystemd (sd-bus) is hk-scale's alone: its systemd backend.
LINK_PKGS =	$(filter-out libpq libsystemd,$(PKGS))
HK_LIBS =	$(shell pkg-config --libs $(LINK_PKGS)) -lhttp_parser -lm

PROGS =		$(notdir $(wildcard cmd/*))
LIB_SRCS =	$(wildcard lib/*.c)
LIB_OBJS =	$(LIB_SRCS:%.c=$(BUILD)/%.o)
LIBHK =		$(BUILD)/libhk.a
UNIT_SRCS =	$(wildcard tests/unit/*.c)
UNIT_TESTS =	$(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/unit/%.t)
TOOL_SRCS =	$(wildcard tests/tools/*.c)
TOOLS =		$(TOOL_SRCS:tests/tools/%.c=$(BUILD)/tests/tools/%)
MANPAGES =	$(wildcard man/*.[1-8])
DEPSTAMP =	build/.deps-ok

all: $(PROGS:%=$(BUILD)/bin/%) $(LIBEXEC_SCRIPTS:%=$(BUILD)/bin/%)

# A script beside the programs, as hk-scale finds it in a build tree.
$(BUILD)/bin/hk-python-template: libexec/hk-python-template.py
	@mkdir -p $(@D)
	install -m 755 $< $@
$(BUILD)/bin/hk-node-spare: libexec/hk-node-spare.js
	@mkdir -p $(@D)
	install -m 644 $< $@

$(DEPSTAMP): scripts/deps tests/npm/package-lock.json
	@mkdir -p build
	scripts/deps
	@touch $@

$(BUILD)/%.o: %.c | $(DEPSTAMP)
	@mkdir -p $(@D)
	$(CC) $(HK_CFLAGS) -MMD -MP -c -o $@ $<

# Tests also see tests/ (tap.h).  A unit test or a tool of a program's
# code names its sources outside lib/ in UNIT_SRCS_<test> or
# TOOL_SRCS_<tool>, as the fuzz harnesses do (FUZZ_SRCS_<target>): they
# are linked in, and their directories join the include path.
ENGINE_SRCS =	cmd/hk-scale/engine.c cmd/hk-scale/engine_ops.c \
		cmd/hk-scale/engine_stream.c cmd/hk-scale/engine_archive.c
UNIT_SRCS_engine = $(ENGINE_SRCS)
UNIT_SRCS_k8s_ready = cmd/hk-scale/k8s_ready.c
TOOL_SRCS_engine-cli = $(ENGINE_SRCS)
test_srcs =	$(UNIT_SRCS_$(notdir $(1))) $(TOOL_SRCS_$(notdir $(1)))
src_objs =	$(patsubst %.c,$(BUILD)/%.o,$(1))

$(BUILD)/tests/%.o: tests/%.c | $(DEPSTAMP)
	@mkdir -p $(@D)
	$(CC) $(HK_CFLAGS) -Itests \
	    $(addprefix -I,$(sort $(dir $(call test_srcs,$*)))) \
	    -MMD -MP -c -o $@ $<

$(LIBHK): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

# A program is every .c file in cmd/<prog>/ linked with libhk.
prog_objs =	$(patsubst %.c,$(BUILD)/%.o,$(wildcard cmd/$(1)/*.c))
.SECONDEXPANSION:
$(BUILD)/bin/%: $$(call prog_objs,$$*) $(LIBHK)
	@mkdir -p $(@D)
	$(CC) $(HK_LDFLAGS) -o $@ $^ $(HK_LIBS)

# hk-hold runs inside a container, whatever its image's libc: static,
# of glibc's libc.a (libc6-dev), with no library of ours, and without
# the sanitizers, whose runtimes do not link static.
$(BUILD)/bin/hk-hold: cmd/hk-hold/main.c | $(DEPSTAMP)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Wformat=2 -Wshadow \
	    -Wmissing-prototypes -Wno-format-nonliteral -Werror -static -s \
	    -o $@ $<

$(BUILD)/bin/hk-scale: HK_LIBS += $(shell pkg-config --libs libsystemd)
$(BUILD)/cmd/hk-scale/libexec.o: \
		HK_CFLAGS += -DHK_LIBEXECDIR='"$(LIBEXECDIR)"'

# hk new's starters, built into hk from etc/starters/<kind>/ (hk(1)): hk
# then works from the build directory and installed alike, with no data
# path to find.  Only these suffixes: never a __pycache__ of a trial run.
STARTERS =	$(sort $(wildcard $(addprefix etc/starters/*/*.,py js json toml)))
$(BUILD)/gen/starters.c: scripts/embed $(STARTERS)
	@mkdir -p $(@D)
	scripts/embed $(STARTERS) >$@.tmp && mv $@.tmp $@

$(BUILD)/gen/starters.o: $(BUILD)/gen/starters.c cmd/hk/starters.h | $(DEPSTAMP)
	$(CC) $(HK_CFLAGS) -Icmd/hk -c -o $@ $<

$(BUILD)/bin/hk: $(BUILD)/gen/starters.o $(call src_objs,$(ENGINE_SRCS))

# hk volumes and hk logs (a node's containers) ask the engines
# themselves, with hk-scale's engine client.
$(BUILD)/cmd/hk/volumes.o $(BUILD)/cmd/hk/logs_node.o: \
		HK_CFLAGS += -Icmd/hk-scale

$(BUILD)/tests/unit/%.t: $(BUILD)/tests/unit/%.o \
    $$(call src_objs,$$(UNIT_SRCS_$$*)) $(LIBHK)
	$(CC) $(HK_LDFLAGS) -o $@ $^ $(HK_LIBS)

$(BUILD)/tests/tools/%: $(BUILD)/tests/tools/%.o \
    $$(call src_objs,$$(TOOL_SRCS_$$*)) $(LIBHK)
	$(CC) $(HK_LDFLAGS) -o $@ $^ $(HK_LIBS)

# bench/bench-floor's blind relay, built with the tests so that it
# cannot rot between benchmark runs; liburing is its own.
RELAY =		$(BUILD)/tests/bench/relay
$(RELAY): $(BUILD)/tests/bench/relay.o
	$(CC) $(HK_LDFLAGS) -o $@ $^ $(shell pkg-config --libs libbsd-overlay) \
	    -luring

tests: $(UNIT_TESTS) $(TOOLS) $(RELAY)

# The suite: unit tests (C, TAP) and integration tests (sh, TAP) under
# prove, inside a throwaway PostgreSQL server (scripts/pg) so the store
# tests run on both engines, beside one container with systemd as PID 1
# (scripts/systemd-ct) for the tests of the units and of the systemd
# backend, and one podman API service (scripts/podman-api) and one Docker
# engine (scripts/docker-engine) for the tests of containers.  A failing
# test's "not ok" lines and every test's comments (got and expected) are
# printed as they come, so that a run whose output is kept in part still
# says what failed and why.
check: all tests
	HK_BUILD=$(CURDIR)/$(BUILD) HK_TOP=$(CURDIR) \
	    scripts/pg exec scripts/systemd-ct exec scripts/podman-api exec \
	    scripts/docker-engine exec prove -e '' -j2 --timer --failures --comments \
	    $(UNIT_TESTS) $(wildcard tests/integration/*.t)
	@$(MAKE) --no-print-directory lint

demo: all
	scripts/demo

# hk beside HAProxy and nginx; BENCH=--quick for the short run.  The
# benches themselves (proxy-bench.sh, coldstart-bench.sh and their fn/)
# are the team's, beside the checkout: BENCH_DIR names another place.
BENCH_DIR ?=	$(CURDIR)/../shared/bench
bench: all $(RELAY)
	scripts/deps --bench
	HK_BENCH_DIR="$(BENCH_DIR)" bench/bench $(BENCH)

lint:
	@command -v mandoc >/dev/null || { echo 'lint: mandoc missing' >&2; exit 1; }
	mandoc -Tlint -Wwarning $(MANPAGES)
	scripts/mdoc-quotes $(MANPAGES)
	@echo 'lint: man pages clean'

FUZZ_SECONDS ?=	60
FUZZ_TARGETS =	$(patsubst tests/fuzz/%.c,build/fuzz/%,$(wildcard tests/fuzz/*.c))
FUZZ_CFLAGS =	-std=c11 -D_GNU_SOURCE -g -O1 -Ilib \
		-fsanitize=fuzzer,address,undefined \
		$(shell pkg-config --cflags $(PKGS))
FUZZ_FLAGS =	-max_len=65536 -timeout=10
# toml-test's cases: Debian's (scripts/deps installs them)
TOML_TEST ?=	/usr/share/gocode/src/github.com/BurntSushi/toml/internal/toml-test/tests

# A harness of a program's code names its sources outside lib/ in
# FUZZ_SRCS_<target>; their directories join the include path.
FUZZ_SRCS_events_fast = cmd/hk-events/fast.c cmd/hk-events/packed.c \
			  cmd/hk-events/record.c
FUZZ_SRCS_engine_events = $(ENGINE_SRCS)
FUZZ_SRCS_engine_logs = $(ENGINE_SRCS)
FUZZ_SRCS_k8s_ready = cmd/hk-scale/k8s_ready.c

build/fuzz/%: tests/fuzz/%.c $(LIB_SRCS) $$(FUZZ_SRCS_$$*) | $(DEPSTAMP)
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) $(addprefix -I,$(sort $(dir $(FUZZ_SRCS_$*)))) \
	    -o $@ $< $(FUZZ_SRCS_$*) $(LIB_SRCS) $(HK_LIBS)

# New inputs go to build/fuzz/corpus-<target> (kept between runs, out of
# git).  Seeds, read only, in build/fuzz/seed-<target>: tests/fuzz/corpus/
# <target> if it exists and, for toml, every .toml case of toml-test.  A
# dictionary tests/fuzz/<target>.dict, if there is one, is given too.
fuzz: $(FUZZ_TARGETS)
	@for t in $(FUZZ_TARGETS); do \
	    n=$$(basename $$t); c=build/fuzz/corpus-$$n; \
	    s=build/fuzz/seed-$$n; rm -rf $$s; mkdir -p $$c $$s; \
	    if [ -d tests/fuzz/corpus/$$n ]; then \
	        cp -R tests/fuzz/corpus/$$n/. $$s; fi; \
	    if [ $$n = toml ] && [ -d $(TOML_TEST) ]; then \
	        (cd $(TOML_TEST) && find valid invalid -name '*.toml' \
	            -exec cp --parents {} $(CURDIR)/$$s \;); fi; \
	    d=; if [ -f tests/fuzz/$$n.dict ]; then \
	        d=-dict=tests/fuzz/$$n.dict; fi; \
	    echo "fuzz: $$n for $(FUZZ_SECONDS)s"; \
	    $$t -max_total_time=$(FUZZ_SECONDS) $(FUZZ_FLAGS) $$d $$c $$s || \
	        exit 1; \
	done

install: all install-config install-user
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(EXAMPLEDIR)/examples
	install -m 755 $(filter-out $(LIBEXEC_PROGS:%=$(BUILD)/bin/%), \
	    $(PROGS:%=$(BUILD)/bin/%)) $(DESTDIR)$(BINDIR)
	install -d $(DESTDIR)$(LIBEXECDIR)
	install -m 755 $(LIBEXEC_PROGS:%=$(BUILD)/bin/%) \
	    $(LIBEXEC_SCRIPTS:%=$(BUILD)/bin/%) $(DESTDIR)$(LIBEXECDIR)
	for p in $(MANPAGES); do \
	    s=$${p##*.}; install -d $(DESTDIR)$(MANDIR)/man$$s; \
	    install -m 644 $$p $(DESTDIR)$(MANDIR)/man$$s; done
	install -d $(DESTDIR)$(UNITDIR)
	for u in etc/systemd/*.service; do \
	    sed 's|@BINDIR@|$(BINDIR)|g' $$u \
	        >$(DESTDIR)$(UNITDIR)/$${u##*/}; done
	for d in etc/s6/*/; do \
	    p=$$(basename $$d); install -d $(DESTDIR)$(EXAMPLEDIR)/s6/$$p/log; \
	    install -m 755 $$d/run $$d/finish $(DESTDIR)$(EXAMPLEDIR)/s6/$$p; \
	    install -m 644 $$d/notification-fd $(DESTDIR)$(EXAMPLEDIR)/s6/$$p; \
	    install -m 755 $$d/log/run $(DESTDIR)$(EXAMPLEDIR)/s6/$$p/log; done
	install -d $(DESTDIR)$(EXAMPLEDIR)/examples/functions
	install -m 644 etc/examples/*.toml etc/examples/api.env \
	    $(DESTDIR)$(EXAMPLEDIR)/examples
	install -m 644 etc/examples/functions/* \
	    $(DESTDIR)$(EXAMPLEDIR)/examples/functions
	install -d $(DESTDIR)$(EXAMPLEDIR)/haproxy
	install -m 644 etc/haproxy/haproxy.cfg $(DESTDIR)$(EXAMPLEDIR)/haproxy

# The operator config, only where there is none: never the operator's.
install-config:
	install -d $(DESTDIR)$(SYSCONFDIR)/hakopod
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/hakopod/hakopod.toml ]; then \
	    echo "install: $(DESTDIR)$(SYSCONFDIR)/hakopod/hakopod.toml" \
	        "exists: kept"; \
	else \
	    echo install -m 644 etc/examples/hakopod.toml \
	        $(DESTDIR)$(SYSCONFDIR)/hakopod/hakopod.toml; \
	    install -m 644 etc/examples/hakopod.toml \
	        $(DESTDIR)$(SYSCONFDIR)/hakopod/hakopod.toml; \
	fi
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/hakopod/vet-prompt.txt ]; then \
	    echo "install: $(DESTDIR)$(SYSCONFDIR)/hakopod/vet-prompt.txt" \
	        "exists: kept"; \
	else \
	    echo install -m 644 etc/vet/vet-prompt.txt \
	        $(DESTDIR)$(SYSCONFDIR)/hakopod/vet-prompt.txt; \
	    install -m 644 etc/vet/vet-prompt.txt \
	        $(DESTDIR)$(SYSCONFDIR)/hakopod/vet-prompt.txt; \
	fi
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/hakopod/waiting.html ]; then \
	    echo "install: $(DESTDIR)$(SYSCONFDIR)/hakopod/waiting.html" \
	        "exists: kept"; \
	else \
	    echo install -m 644 etc/activate/waiting.html \
	        $(DESTDIR)$(SYSCONFDIR)/hakopod/waiting.html; \
	    install -m 644 etc/activate/waiting.html \
	        $(DESTDIR)$(SYSCONFDIR)/hakopod/waiting.html; \
	fi

# The user hakopod, once, on this system only (not into a DESTDIR).
install-user:
	@if [ -n "$(DESTDIR)" ]; then \
	    echo "install: DESTDIR is set: create the user hakopod on the" \
	        "target system: $(USERADD)"; \
	elif getent passwd hakopod >/dev/null; then \
	    echo "install: user hakopod exists"; \
	else \
	    echo "$(USERADD)"; $(USERADD); \
	fi

clean:
	rm -rf build/rel build/san build/fuzz

.PHONY: all tests check lint fuzz install install-config install-user \
	clean demo bench
.SECONDARY:
-include $(wildcard $(BUILD)/lib/*.d $(BUILD)/cmd/*/*.d $(BUILD)/tests/*/*.d)
