# sbx: a plain Makefile.  `make` builds the tools into bin/, `make check`
# installs what the tests need (make deps) and runs them, `make install`
# copies tools, configuration and man pages under $(DESTDIR)$(PREFIX).

PREFIX     ?= /usr/local
DESTDIR    ?=
# /usr's configuration is in /etc; any other prefix keeps its own.
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
STATEDIR   ?= /var/lib/sbx
RUNDIR     ?= /run/sbx
MANDIR     ?= $(PREFIX)/share/man
# systemd units, and bash and zsh completion (Debian's places under /usr)
UNITDIR    ?= $(PREFIX)/lib/systemd/system
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/$(if $(filter /usr,$(PREFIX)),vendor-completions,site-functions)
PYCOMPILE  ?= yes

CC      ?= cc
CFLAGS  ?= -O2 -g
BUILD   ?= build
BINDIR  ?= bin

WARN := -std=c11 -Wall -Wextra -Wshadow -Wno-unused-parameter -Wstrict-prototypes -Wvla
ifeq ($(CI),true)
WARN += -Werror
endif
PKGS     := libseccomp sqlite3 libmicrohttpd libpng
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lseccomp -lsqlite3 -lmicrohttpd -lpng16)
# lib/ in layers (lib/README.md): each folder's headers by their own names.
LAYERS   := core sandbox run history mcp batch
CPPFLAGS += $(addprefix -Ilib/,$(LAYERS)) -D_FILE_OFFSET_BITS=64 \
            -DSBX_SYSCONFDIR='"$(SYSCONFDIR)"' -DSBX_STATEDIR='"$(STATEDIR)"' \
            -DSBX_RUNDIR='"$(RUNDIR)"'
ALL_CFLAGS = $(WARN) $(CFLAGS) $(PKG_CFLAGS) -MMD -MP
# -z now: symbols are bound once at start-up, not lazily in each forked
# sandbox init and program child (each would redo the lookups and copy the
# GOT pages): a one-job sbx-run costs ~1.3 ms less CPU.  Full RELRO too.
LDLIBS  += -Wl,--as-needed -ljq $(PKG_LIBS) -lm -Wl,-z,relro,-z,now

TOOLS    := sbx-validate sbx-run sbx-cap sbx-log sbx-history sbx-mcp sbx-shard sbx-batch sbx-merge
LIB_SRC  := $(wildcard $(addsuffix /*.c,$(addprefix lib/,$(LAYERS))))
# The dashboard's stylesheet and script: files, embedded in the library
# (page.h's page_css and page_js) by the rule for dash_assets.c below.
DASH_ASSETS := lib/history/dash.css lib/history/dash.js
LIB_OBJ  := $(patsubst lib/%.c,$(BUILD)/obj/lib/%.o,$(LIB_SRC)) $(BUILD)/obj/gen/dash_assets.o
UNIT_SRC := $(wildcard t/unit/*.c)
UNITS    := $(patsubst t/unit/%.c,$(BUILD)/t/%,$(UNIT_SRC))
MANS     := $(wildcard man/*.1)

.PHONY: deb image image-slim deb-arm64 image-arm64 image-slim-arm64 deps-arm64 check-arm64 dash-shots typescript python-site python-fonts demo all check check-asan check-kernels check-builds check-valgrind vg-wrappers unit deps deps-lang deps-test deps-deb install uninstall clean fuzz fuzz-build bench bench-run bench-tokens differential mcp-client test-tools
# Helpers the tools run, not tools: in ../libexec/sbx beside the tools'
# directory, in a checkout as when installed.
LIBEXECDIR := $(BINDIR)/../libexec/sbx
HELPERS    := sbx-egress sbx-egress-shim sbx-thumb
all: $(addprefix $(BINDIR)/,$(TOOLS)) $(addprefix $(LIBEXECDIR)/,$(HELPERS))

$(LIBEXECDIR)/sbx-egress: src/sbx-egress.c $(BUILD)/libsbx.a
	@mkdir -p $(LIBEXECDIR) $(BUILD)/obj/src
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -MF $(BUILD)/obj/src/sbx-egress.d -o $@ $< $(BUILD)/libsbx.a $(LDFLAGS) $(LDLIBS)

$(LIBEXECDIR)/sbx-thumb: src/sbx-thumb.c $(BUILD)/libsbx.a
	@mkdir -p $(LIBEXECDIR) $(BUILD)/obj/src
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -MF $(BUILD)/obj/src/sbx-thumb.d -o $@ $< $(BUILD)/libsbx.a $(LDFLAGS) $(LDLIBS)

# The docker backend's install containers run this in the language's image
# (lib/sandbox/egress.h), whatever its libc: linked statically, and never with the
# sanitizers (they do not link statically).
$(LIBEXECDIR)/sbx-egress-shim: src/sbx-egress-shim.c
	@mkdir -p $(LIBEXECDIR)
	$(CC) $(WARN) -O2 -g -static -o $@ $<

$(BUILD)/obj/lib/%.o: lib/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -I$(BUILD)/gen $(ALL_CFLAGS) -c -o $@ $<

# The seccomp program, compiled with libseccomp here rather than in every
# process (lib/sandbox/filter.h).  build-aux/filter_gen.c, which does it,
# is build-time only: not in the library.
$(BUILD)/gen/filter_bpf.h: build-aux/gen-filter.c build-aux/filter_gen.c lib/sandbox/filter_policy.c lib/core/util.c lib/sandbox/filter.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -MF $(BUILD)/gen/gen-filter.d -o $(BUILD)/gen/gen-filter build-aux/gen-filter.c \
		build-aux/filter_gen.c lib/sandbox/filter_policy.c lib/core/util.c $(LDFLAGS) $(LDLIBS)
	$(BUILD)/gen/gen-filter > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/lib/sandbox/filter.o: $(BUILD)/gen/filter_bpf.h

# The dashboard's files as C strings, every byte an octal escape (od and
# sed, which every system has; no escaping to get wrong), so that C's
# string concatenation can append what only C knows: page_css is dash.css
# and then page_int.h's PAGE_CSS_FROM_C.
dash_embed = printf '/* %s */\nconst char %s[] =\n' $(1) $(2) && \
	od -An -v -to1 $(1) | sed 's/ *\([0-7]\{3\}\)/\\\1/g; s/.*/"&"/' && printf '%s;\n' '$(3)'
$(BUILD)/gen/dash_assets.c: $(DASH_ASSETS)
	@mkdir -p $(dir $@)
	@{ echo '#include "page_int.h"' && $(call dash_embed,lib/history/dash.css,page_css,PAGE_CSS_FROM_C) && \
		$(call dash_embed,lib/history/dash.js,page_js,); } > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/gen/dash_assets.o: $(BUILD)/gen/dash_assets.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<

# A layer includes only its own and the layers below it (lib/README.md).
$(BUILD)/layers.ok: build-aux/check-layers $(LIB_SRC) $(wildcard lib/*/*.h)
	@mkdir -p $(BUILD)
	@build-aux/check-layers && touch $@

# C code names a request field by REQ_KEY and a status by STATUS, never as
# a string (build-aux/check-names).  Order-only: it runs when a source
# (of lib/ or src/) changed, and only its failure stops the build.
$(BUILD)/names.ok: build-aux/check-names $(LIB_SRC) $(wildcard lib/*/*.h) $(wildcard src/*.c)
	@mkdir -p $(BUILD)
	@build-aux/check-names && touch $@

$(BUILD)/libsbx.a: $(LIB_OBJ) $(BUILD)/layers.ok | $(BUILD)/names.ok
	@rm -f $@
	$(AR) rcs $@ $(LIB_OBJ)

$(BINDIR)/%: src/%.c $(BUILD)/libsbx.a
	@mkdir -p $(BINDIR) $(BUILD)/obj/src
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -MF $(BUILD)/obj/src/$*.d -o $@ $< $(BUILD)/libsbx.a $(LDFLAGS) $(LDLIBS)

$(BUILD)/t/%: t/unit/%.c $(BUILD)/libsbx.a
	@mkdir -p $(BUILD)/t $(BUILD)/obj/t
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -MF $(BUILD)/obj/t/$*.d -o $@ $< $(if $(filter filter_test,$*),build-aux/filter_gen.c) \
		$(BUILD)/libsbx.a $(LDFLAGS) $(LDLIBS)

-include $(LIB_OBJ:.o=.d) $(wildcard $(BUILD)/obj/src/*.d) $(wildcard $(BUILD)/obj/t/*.d)

unit: $(UNITS)

# ---- the main job: example requests through the pipeline -----------------
demo: deps
	@command -v jq > /dev/null || build-aux/apt-need demo jq   # the demo's display
	@$(MAKE) -s --no-print-directory all
	@echo "sbx-validate < etc/examples/tour.jsonl | sbx-run | sbx-cap | sbx-log" >&2
	@$(BINDIR)/sbx-validate < etc/examples/tour.jsonl | $(BINDIR)/sbx-run | $(BINDIR)/sbx-cap | $(BINDIR)/sbx-log | jq -r -f etc/examples/show.jq
	@echo "sbx-history --stats --since 1h --format table" >&2
	@$(BINDIR)/sbx-history --stats --since 1h --format table

# make bench: every benchmark, its tables to the terminal and to
# bench/results/DATE-COMMIT.md with the machine and the commit they
# describe (nobody copies figures by hand; doc/performance.md says how to
# read them).
bench: deps-test bench-tokens all
	@mkdir -p bench/results
	@f=bench/results/$$(date -u +%Y-%m-%dT%H%MZ)-$$(git rev-parse --short HEAD 2>/dev/null || echo unknown).md; \
	{ echo "# make bench, $$(date -u '+%F %T') UTC"; echo; \
	  echo "- machine: $$(uname -srm), $$(nproc) CPUs, $$(awk '/MemTotal/ {print int($$2 / 1024) " MiB"}' /proc/meminfo), /sys/fs/cgroup is $$(stat -fc %T /sys/fs/cgroup)"; \
	  echo "- commit: $$(git rev-parse HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD 2>/dev/null || echo ', with uncommitted changes')"; \
	  if [ -n "$(BENCH_ONLY)" ]; then echo "- parts: $(BENCH_ONLY) (BENCH_ONLY)"; fi; \
	  echo; echo '```'; rm -f $(BUILD)/bench/summary.tsv; \
	  SBX_BENCH_SUMMARY=$(CURDIR)/$(BUILD)/bench/summary.tsv $(MAKE) -s --no-print-directory bench-run 2>&1; echo '```'; } | tee "$$f"; \
	echo "written to $$f"; \
	if [ -z "$(BENCH_ONLY)" ]; then build-aux/bench-readme $(BUILD)/bench/summary.tsv "$$f"; fi

# The tokenizer bench/mcp_tokens.mjs counts with (gpt-tokenizer's
# o200k_base), exactly as locked (bench/tokens).
bench-tokens: deps-test
	@build-aux/npm-get bench-tokens ci bench/tokens

$(BUILD)/bench/sha256: bench/sha256.c $(BUILD)/libsbx.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -MF $@.d -o $@ $< $(BUILD)/libsbx.a $(LDFLAGS) $(LDLIBS)

# BENCH_ONLY="run guest": only those parts (bench/parts.sh names them);
# the README's table is then left as it is.
bench-run: $(BUILD)/bench/sha256
	@BUILD=$(BUILD) bench/parts.sh $(BENCH_ONLY)

# All of the differential suite (t/diff/run.py): CPython's regression tests
# and t/diff/programs/, bare and sandboxed; prints agree N/M and every
# disagreement with its reason.  About 30 minutes on 2 CPUs.
differential: deps-test all
	@t/diff/run.py --all --jobs $${JOBS:-2}

# The dashboard's screenshots in doc/img, from the last browser test
# (t/64-dashboard.bats writes them to build/dash).
dash-shots:
	@for f in overview run runs; do test -s $(BUILD)/dash/$$f.png || { echo "make dash-shots: no $(BUILD)/dash/$$f.png: run t/64-dashboard.bats first" >&2; exit 1; }; done
	@mkdir -p doc/img && for f in overview run runs; do cp $(BUILD)/dash/$$f.png doc/img/dashboard-$$f.png; done

# ---- dependencies from Debian's packages ---------------------------------
# By purpose (build-aux/packages.mk): make deps installs what building and
# running need, make deps-lang the optional languages (all, or those
# LANGS names), make deps-test the test toolchain as well, make deps-deb
# what make deb needs.  Only what is missing is installed, no service is
# started or enabled (build-aux/apt-need); as non-root the command is
# printed instead.
include build-aux/packages.mk
LANGS ?= $(LANGS_OPTIONAL)
deps:
	@build-aux/apt-need deps $(PKGS_BUILD) $(PKGS_RUN)
	@$(MAKE) -s --no-print-directory python-site
deps-lang: deps
	@$(foreach l,$(filter-out $(LANGS_OPTIONAL),$(LANGS)),$(error make deps-lang: no optional language "$(l)"; they are: $(LANGS_OPTIONAL)))
	@build-aux/apt-need deps-lang $(foreach l,$(LANGS),$(PKGS_LANG_$(l)))
	@$(if $(filter typescript,$(LANGS)),$(MAKE) -s --no-print-directory typescript)
	@$(if $(filter pydata,$(LANGS)),$(MAKE) -s --no-print-directory python-site)
deps-test:
	@$(MAKE) -s --no-print-directory deps-lang LANGS='$(LANGS_OPTIONAL)'
	@build-aux/apt-need --no-boot deps-test $(PKGS_TEST) $(PKGS_DEB)
deps-deb: deps
	@build-aux/apt-need deps-deb $(PKGS_DEB)

# What sandboxes run of sbx's own, where etc/sandbox.conf points and they
# see it: Python's start-up hook (share/python/sitecustomize.py: figures
# without a display, plt.show() to a PNG) and the kernels behind run_cell
# (share/python/sbx_kernel.py, share/node/sbx_kernel.js); make install puts
# them under PREFIX.
SBXSHARE := /usr/local/share/sbx
PYSITE := $(SBXSHARE)/python
SHARE_FILES := python/sitecustomize.py python/sbx_kernel.py node/sbx_kernel.js
# Launchers for a batch past one machine (doc/scale-out.md).
LAUNCH_FILES := launch/slurm/sbx-array.sbatch launch/slurm/sbx-slurm launch/parallel/sbx-parallel launch/k8s/sbx-indexed-job.yaml
# The interpreter sandboxes run (etc/sandbox.conf: python3 on their PATH).
SANDBOX_PYTHON := $(firstword $(wildcard /usr/bin/python3) python3)
python-site:
	@fresh=1; for f in $(SHARE_FILES); do cmp -s share/$$f $(SBXSHARE)/$$f || fresh=0; done; \
	if [ $$fresh = 1 ] && [ -d $(PYSITE)/__pycache__ ] && \
	    { [ ! -d /usr/lib/python3/dist-packages/matplotlib ] || ls $(PYSITE)/mpl/fontlist-*.json > /dev/null 2>&1; }; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
		echo "make deps: as root, make python-site (sbx's files for sandboxes in $(SBXSHARE))" >&2; exit 0; fi; \
	for f in $(SHARE_FILES); do install -D -m 0644 share/$$f $(SBXSHARE)/$$f || exit 1; done && \
	$(SANDBOX_PYTHON) -m compileall -q $(PYSITE) && \
	$(MAKE) -s --no-print-directory python-fonts
# Sandboxes cannot write the hook's bytecode: it is compiled here.  Nor keep
# matplotlib's font cache from one run to the next: it is built here, once,
# and the hook copies it into each run's HOME.
python-fonts:
	@[ -d /usr/lib/python3/dist-packages/matplotlib ] || exit 0; \
	d=$$(mktemp -d) && HOME=$$d MPLCONFIGDIR=$$d $(SANDBOX_PYTHON) -c 'import matplotlib.font_manager' 2> /dev/null && \
	install -d $(PYSITE)/mpl && install -m 0644 $$d/fontlist-*.json $(PYSITE)/mpl/; rm -rf $$d

# TypeScript: Debian's tsc (4.8) has no Node.js type definitions to go with
# NodeSource's Node.js, so the compiler and @types/node come from the npm
# registry, pinned, into /usr/local (which sandboxes see).  Without npm or
# the registry, the typescript language reports itself missing.
TS_PKGS := typescript@5.9.3 @types/node@20.19.43
typescript:
	@if [ -x /usr/local/bin/tsc ] && [ -d /usr/local/lib/node_modules/@types/node ]; then exit 0; fi; \
	if ! command -v npm > /dev/null || [ "$$(id -u)" != 0 ]; then \
		echo "make typescript: TypeScript not installed (as root with npm: npm install -g --prefix /usr/local $(TS_PKGS))" >&2; exit 0; fi; \
	echo "make typescript: installing $(TS_PKGS) into /usr/local" >&2; \
	build-aux/npm-get typescript global $(TS_PKGS) || \
		echo "make typescript: without TypeScript's compiler the typescript language reports itself missing; its tests are skipped" >&2

# The official MCP SDK for t/65-mcp-sdk.bats, the official conformance
# suite for t/66-mcp-conformance.bats and the MCP Inspector's CLI for
# t/68-mcp-inspector.bats, exactly as locked.  The Inspector without its
# optional packages (native bindings: the OS keyring, for OAuth secrets,
# and its web UI's bundler; 34 MB that t/68 never loads) and without its
# postinstall script (it installs the sub-clients of a source checkout,
# and does nothing under node_modules).
mcp-client: deps-test
	@build-aux/npm-get mcp-client ci t/mcp-client && build-aux/npm-get mcp-client ci t/mcp-conformance && \
		npm_config_omit=optional npm_config_ignore_scripts=true build-aux/npm-get mcp-client ci t/mcp-inspector && \
		PUPPETEER_SKIP_DOWNLOAD=1 build-aux/npm-get mcp-client ci t/browser

# bats-core for t/run, exactly as locked (t/bats): 1.10 or later picks
# tests by their tags (the guests run those tagged kernel); Debian 12 has
# 1.8.
test-tools: deps-test
	@build-aux/npm-get test-tools ci t/bats

# ---- tests ----------------------------------------------------------------
# The suite runs against the ASan+UBSan build (memory errors fail it) after
# the unit tests, then the tests tagged kernel again in guests under Debian
# 12's and 13's kernels with cgroup v2 (t/guest/run); t/run prints where
# the time went and, as its last line, the totals (doc/testing.md).
ASAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
JOBS := -j$(shell nproc 2> /dev/null || echo 2)

check: deps-test mcp-client test-tools check-builds
	@$(MAKE) -s --no-print-directory vg-wrappers
	@t/run --valgrind --docker --guest

check-builds:
	@$(MAKE) --no-print-directory $(JOBS) all unit
	@$(MAKE) --no-print-directory $(JOBS) BUILD=build/asan BINDIR=build/asan/bin CFLAGS='$(ASAN_FLAGS)' LDFLAGS='-fsanitize=address,undefined' all unit

check-asan: check

# The whole former matrix, before tags: every sandbox suite (run,
# languages, cells, judging, isolation, slots, the ordinary user, the
# package, in the root t/pkg/root makes) in the guests, as root and as a
# delegated user under Debian 12's kernel and the slots' under Debian 13's
# (doc/testing.md says how long).  Run it before resolving a change to
# lib/sandbox, lib/run, the kernels' scripts or the seccomp policy.
check-kernels: deps-test test-tools check-builds deb
	@t/pkg/root $(DEB_FILE) > $(BUILD)/pkg-root.log 2>&1 || { tail -n 5 $(BUILD)/pkg-root.log >&2; exit 1; }
	@t/run --kernels

# valgrind (memcheck) over the tests tagged valgrind (helpers.bash): the
# record tools' and sbx-mcp's, where it sees what ASan does not.  sbx-run
# is left out: valgrind 3.19 does not know the system calls it is built on
# (clone3, fsopen, fsmount, open_tree, move_mount, mount_setattr); ASan,
# UBSan and LSan cover it in make check.  sbx-mcp's session tests need
# openat2, which valgrind 3.19 does not know either, and run under ASan.
VG_TOOLS := sbx-validate sbx-cap sbx-log sbx-history sbx-mcp sbx-shard sbx-merge sbx-batch
check-valgrind: deps-test test-tools all vg-wrappers
	@t/run --no-unit --no-host --valgrind

vg-wrappers: all
	@mkdir -p $(BUILD)/vg/bin
	@for t in $(TOOLS); do \
		rm -f $(BUILD)/vg/bin/$$t; \
		if echo " $(VG_TOOLS) " | grep -q " $$t "; then \
			printf '#!/bin/sh\nexec valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect "%s/%s" "$$@"\n' "$(CURDIR)/$(BINDIR)" $$t > $(BUILD)/vg/bin/$$t; \
			chmod +x $(BUILD)/vg/bin/$$t; \
		else ln -sf "$(CURDIR)/$(BINDIR)/$$t" $(BUILD)/vg/bin/$$t; fi; \
	done

# ---- fuzzing (clang libFuzzer) -----------------------------------------
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_TARGETS := $(patsubst fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard fuzz/fuzz_*.c))
FUZZ_SECONDS ?= 60

fuzz-build: $(FUZZ_TARGETS)
$(BUILD)/fuzz/%: fuzz/%.c $(LIB_SRC) $(wildcard lib/*/*.h) $(BUILD)/gen/filter_bpf.h $(BUILD)/gen/dash_assets.c
	@mkdir -p $(BUILD)/fuzz
	clang $(CPPFLAGS) -I$(BUILD)/gen -std=c11 $(FUZZ_FLAGS) $(PKG_CFLAGS) -o $@ $< $(LIB_SRC) $(BUILD)/gen/dash_assets.c -ljq $(PKG_LIBS) -lm

fuzz: deps-test fuzz-build
	@for f in $(FUZZ_TARGETS); do \
		name=$$(basename $$f); mkdir -p $(BUILD)/corpus/$$name; \
		echo "== $$name for $(FUZZ_SECONDS) s"; \
		$$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 \
			$(BUILD)/corpus/$$name fuzz/corpus/$$name 2>&1 | grep -E 'stat::number_of_executed_units|ERROR|SUMMARY|Done' || exit 1; \
	done

# ---- install ------------------------------------------------------------
UNITS_SYSTEMD := sbx-mcp.socket sbx-mcp.service sbx-history-prune.service sbx-history-prune.timer
# The tools find PREFIX/etc/sbx/sandbox.conf beside themselves, so nothing
# depends on the PREFIX they were built with.  A configuration already
# there is the administrator's: the new one goes beside it as .new.
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(SYSCONFDIR)/sbx $(DESTDIR)$(MANDIR)/man1 \
	    $(DESTDIR)$(PREFIX)/libexec/sbx $(DESTDIR)$(PREFIX)/share/sbx/examples
	install -d -m 0755 $(DESTDIR)$(STATEDIR)
	install -m 0755 $(addprefix $(BINDIR)/,$(TOOLS)) $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 $(addprefix $(LIBEXECDIR)/,$(HELPERS)) $(DESTDIR)$(PREFIX)/libexec/sbx/
	install -m 0644 etc/examples/tour.jsonl etc/examples/show.jq $(DESTDIR)$(PREFIX)/share/sbx/examples/
	install -D -m 0644 share/apparmor/sbx $(DESTDIR)$(PREFIX)/share/sbx/apparmor/sbx
	for f in $(SHARE_FILES); do install -D -m 0644 share/$$f $(DESTDIR)$(PREFIX)/share/sbx/$$f || exit 1; done
	for f in $(LAUNCH_FILES); do install -D -m $$(test -x share/$$f && echo 0755 || echo 0644) share/$$f $(DESTDIR)$(PREFIX)/share/sbx/$$f || exit 1; done
	if [ "$(PYCOMPILE)" = yes ]; then \
		$(SANDBOX_PYTHON) -m compileall -q $(DESTDIR)$(PREFIX)/share/sbx/python && \
		$(MAKE) -s --no-print-directory python-fonts PYSITE=$(DESTDIR)$(PREFIX)/share/sbx/python; fi
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	for u in $(UNITS_SYSTEMD); do sed 's|/usr/bin/|$(PREFIX)/bin/|g; s|/etc/sbx/|$(SYSCONFDIR)/sbx/|g' share/systemd/$$u > $(DESTDIR)$(UNITDIR)/$$u && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$$u || exit 1; done
	install -m 0644 share/completion/sbx.bash $(DESTDIR)$(BASHCOMPDIR)/sbx
	for t in $(TOOLS); do ln -sf sbx $(DESTDIR)$(BASHCOMPDIR)/$$t; done
	install -m 0644 share/completion/_sbx $(DESTDIR)$(ZSHCOMPDIR)/_sbx
	install -m 0755 share/container/entrypoint $(DESTDIR)$(PREFIX)/libexec/sbx/container-entrypoint
	sed -e 's|^state_dir *=.*|state_dir       = "$(STATEDIR)"|' \
	    -e 's|$(SBXSHARE)|$(PREFIX)/share/sbx|g' \
	    -e 's|^history *=.*|history         = "$(STATEDIR)/sandbox_history.db"|' \
	    etc/sandbox.conf > $(BUILD)/sandbox.conf.installed~ && mv $(BUILD)/sandbox.conf.installed~ $(BUILD)/sandbox.conf.installed
	@conf=$(DESTDIR)$(SYSCONFDIR)/sbx/sandbox.conf; \
	if [ -e $$conf ] && ! cmp -s $(BUILD)/sandbox.conf.installed $$conf; then \
		install -m 0644 $(BUILD)/sandbox.conf.installed $$conf.new; \
		echo "kept $$conf (yours); the new default is $$conf.new"; \
	else install -m 0644 $(BUILD)/sandbox.conf.installed $$conf; fi
	install -m 0644 $(MANS) $(DESTDIR)$(MANDIR)/man1/

# ---- the Debian package ---------------------------------------------------
# make deb: build/deb/sbx_VERSION_ARCH.deb, from the files git tracks (and
# new ones it does not ignore), built by dpkg-buildpackage in a copy, so
# the work tree and its parent get nothing; lintian's errors fail it
# (where make deps-test installed lintian).
# Built again only when one of those files changed (t/72 and t/90 both
# ask for it, at once: the lock makes the second wait for the first).
# (Expanded where used, not here: on a fresh machine dpkg-parsechangelog
# comes with make deps-deb, after this file was read.)
DEB_VERSION  = $(shell dpkg-parsechangelog -l debian/changelog -S Version 2> /dev/null)
DEB_FILE     = $(BUILD)/deb/sbx_$(DEB_VERSION)_$(shell dpkg --print-architecture 2> /dev/null).deb
DEB_SRC     := $(wildcard $(shell git ls-files -co --exclude-standard 2> /dev/null))
deb: deps-deb
	@mkdir -p $(BUILD) && flock $(BUILD)/deb.lock $(MAKE) -s --no-print-directory $(DEB_FILE)
	@cat $(BUILD)/deb/lintian.log >&2; echo $(DEB_FILE)
$(DEB_FILE): $(DEB_SRC)
	@v=$$(sed -n 's/^#define SBX_VERSION "\(.*\)"/\1/p' lib/core/util.h); [ "$$v" = "$(DEB_VERSION)" ] || \
		{ echo "make deb: debian/changelog is $(DEB_VERSION), the tools are $$v" >&2; exit 1; }
	rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb/sbx-$(DEB_VERSION)
	git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t $(BUILD)/deb/sbx-$(DEB_VERSION)
	cd $(BUILD)/deb/sbx-$(DEB_VERSION) && dpkg-buildpackage -us -uc -b > ../build.log 2>&1 || \
		{ tail -n 30 ../build.log >&2; exit 1; }
	@if ! command -v lintian > /dev/null; then echo "make deb: lintian is not installed (make deps-test installs it): the package is not checked" > $(BUILD)/deb/lintian.log; \
	else lintian --fail-on error $@ > $(BUILD)/deb/lintian.log 2>&1 || { cat $(BUILD)/deb/lintian.log >&2; rm -f $@; exit 1; }; fi

# make image: the container image sbx:VERSION (and sbx:latest) in the
# engine DOCKER_HOST names, from the package over a fresh Debian root
# with every language's runtime (build-aux/mkimage; doc/install.md says
# how to run it), and the seccomp profile it runs under,
# build/image/sbx-seccomp.json.  make image-slim: sbx:VERSION-slim (and
# sbx:slim), the languages the package recommends and no other.  Each is
# made again only when the engine's image holds another package (its
# comment says which).
image: deb $(BUILD)/image/sbx-seccomp.json
	@$(call mkimage,full,,latest)
image-slim: deb $(BUILD)/image/sbx-seccomp.json
	@$(call mkimage,slim,-slim,slim)
# $(call mkimage,FLAVOUR,VERSION-SUFFIX,ALIAS[,DEB,MKIMAGE-OPTION])
mkimage = t=sbx:$(DEB_VERSION)$(2) deb=$(or $(4),$(DEB_FILE)); \
	if [ "$$(docker image inspect -f '{{.Comment}}' $$t 2> /dev/null)" = \
	     "sbx $(DEB_VERSION) deb $$(sha256sum < $$deb | cut -d' ' -f1)" ] && \
	   { [ -z "$(5)" ] || [ -f $(BUILD)/image/sbx-$(DEB_VERSION)$(2).tar ]; }; then echo "$$t is up to date"; \
	else build-aux/mkimage $(5) $$deb $$t sbx:$(3) $(1) $(IMAGE_PKGS_$(1)); fi && docker tag $$t sbx:$(3) && \
	echo "its seccomp profile: $(BUILD)/image/sbx-seccomp.json"

# ---- arm64: the image for Apple Silicon ---------------------------------
# Docker Desktop on an M-series Mac runs linux/arm64.  The package for
# arm64 is built in an arm64 Debian root, build/arm64/root (what make deb
# needs there, and a Docker engine for check-arm64's guest, whose root it
# is too), made and entered under build-aux/emulate: qemu-user with a
# binfmt_misc handler of its own (Linux 6.7+) or the machine's.
# make image-arm64 and image-slim-arm64 build sbx:VERSION-arm64 and
# sbx:VERSION-slim-arm64 from it (doc/install.md), the package built again
# when its sources change.  Tens of minutes the first time.
ARM64_ROOT := $(BUILD)/arm64/root
ARM64_DEB   = $(BUILD)/arm64/b/deb/sbx_$(DEB_VERSION)_arm64.deb
deps-arm64:
	@build-aux/apt-need --no-boot deps-arm64 $(PKGS_ARM64)
$(ARM64_ROOT)/.made: build-aux/debroot build-aux/emulate build-aux/packages.mk
	@rm -rf $(ARM64_ROOT) && mkdir -p $(ARM64_ROOT)
	@echo "make: an arm64 Debian root in $(ARM64_ROOT), under emulation"
	@build-aux/emulate arm64 build-aux/debroot $(ARM64_ROOT) --architectures=arm64 \
		--include='$(call pkgs_commas,$(PKGS_ARM64_ROOT))' > $(BUILD)/arm64/root.log 2>&1 || \
		{ tail -n 20 $(BUILD)/arm64/root.log >&2; exit 1; }
	@touch $@
deb-arm64: deps-arm64
	@mkdir -p $(BUILD)/arm64 && $(MAKE) -s --no-print-directory $(ARM64_ROOT)/.made
	@build-aux/emulate arm64 build-aux/inroot $(ARM64_ROOT) make -s --no-print-directory deb BUILD=$(BUILD)/arm64/b
image-arm64: deb-arm64 $(BUILD)/image/sbx-seccomp.json
	@$(call mkimage,full,-arm64,latest-arm64,$(ARM64_DEB),--arch arm64)
image-slim-arm64: deb-arm64 $(BUILD)/image/sbx-seccomp.json
	@$(call mkimage,slim,-slim-arm64,slim-arm64,$(ARM64_DEB),--arch arm64)

# The slim arm64 image proven on an arm64 kernel: Debian 12's, booted by
# QEMU (TCG) over build/arm64/root (t/guest/run --arch arm64), where a
# Docker engine loads the image and the MCP SDK's client runs Python, C++
# and a session through docker run -i (t/guest/image-proof).  The image is
# made with this machine's engine (t/docker/engine), and its archive
# carried into the guest.
check-arm64: deps-test deps-arm64 mcp-client $(BUILD)/image/sbx-seccomp.json
	@st=$(BUILD)/docker/started; own=; [ -f $$st ] && kill -0 "$$(cat $$st)" 2> /dev/null || own=1; \
	t/docker/engine start > $(BUILD)/arm64/engine.log 2>&1 && export DOCKER_HOST=$$(cat $(BUILD)/docker/host) && \
	$(MAKE) -s --no-print-directory image-slim-arm64; rc=$$?; \
	[ -z "$$own" ] || t/docker/engine stop > /dev/null 2>&1; [ $$rc -eq 0 ] || { cat $(BUILD)/arm64/engine.log >&2; exit 1; }
	@t/guest/run --arch arm64 --root $(ARM64_ROOT) --cpus 2 --memory 4096 --timeout 3600 \
		t/guest/image-proof $(BUILD)/image/sbx-$(DEB_VERSION)-slim-arm64.tar sbx:$(DEB_VERSION)-slim-arm64
# The seccomp profile the image's containers run under: Docker's default
# and pivot_root (build-aux/seccomp-profile).
$(BUILD)/image/sbx-seccomp.json: build-aux/seccomp-profile
	@command -v jq > /dev/null || build-aux/apt-need image jq
	@mkdir -p $(dir $@) && build-aux/seccomp-profile $@ > /dev/null

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/bin/,$(TOOLS)) $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(MANS)))
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,$(UNITS_SYSTEMD)) $(addprefix $(DESTDIR)$(BASHCOMPDIR)/,sbx $(TOOLS)) $(DESTDIR)$(ZSHCOMPDIR)/_sbx
	rm -rf $(DESTDIR)$(PREFIX)/libexec/sbx $(DESTDIR)$(PREFIX)/share/sbx
	rm -rf $(DESTDIR)$(SYSCONFDIR)/sbx

clean:
	rm -rf $(BUILD) $(BINDIR) libexec
