# Debian packages by purpose, the one list of them: the Makefile installs
# from it (make deps, deps-lang, deps-test, deps-deb) and debian/rules
# declares the package's Recommends and Suggests from it, so what a
# checkout installs and what the package asks for cannot drift apart.

# npm, unless one is on PATH already: NodeSource's Node.js brings its own,
# and conflicts with Debian's.
PKG_NPM := $(if $(shell command -v npm 2> /dev/null),,npm)

# Building the tools.
PKGS_BUILD := gcc make pkg-config libjq-dev libseccomp-dev libsqlite3-dev libmicrohttpd-dev libpng-dev

# Running them: the runtimes of the languages every host is expected to
# have (Python, C, C++, JavaScript, Bash), completion, and mkfs.btrfs (whose
# snapshots make checkpoints) and mke2fs, which a root server makes session
# workspaces with.  The package recommends them.
PKGS_RUN := python3 gcc g++ libc6-dev nodejs bash-completion e2fsprogs btrfs-progs

# Each optional language's runtime (etc/sandbox.conf: a language whose
# runtime is missing says so when asked for); Python's data and plotting
# libraries, which programs import out of the box where they are
# installed; TypeScript's compiler comes from npm (make typescript).  The
# package suggests them, with the docker backend's engine and zsh.
PKGS_LANG_go         := golang-go
PKGS_LANG_rust       := rustc
PKGS_LANG_java       := default-jdk-headless
PKGS_LANG_ruby       := ruby
PKGS_LANG_php        := php-cli
PKGS_LANG_pydata     := python3-numpy python3-pandas python3-matplotlib
PKGS_LANG_typescript := $(PKG_NPM)
LANGS_OPTIONAL := go rust java ruby php pydata typescript
PKGS_SUGGEST := $(foreach l,$(filter-out typescript,$(LANGS_OPTIONAL)),$(PKGS_LANG_$(l))) docker.io zsh

# The container images (make image, image-slim; build-aux/mkimage): what
# they hold beside the package's dependencies and recommendations.  npm
# there, whatever the build machine has, for TypeScript's compiler.
IMAGE_PKGS_full := $(foreach l,go rust java ruby php,$(PKGS_LANG_$(l))) npm
IMAGE_PKGS_slim :=

# make deb: dpkg-buildpackage's own needs and the package's Build-Depends.
PKGS_DEB := build-essential debhelper

# The test toolchain, which make check installs and nothing else does.
# Tests: jq (gojq for the guests), valgrind, clang (sanitizers, fuzzing);
# bats-core comes from npm (make test-tools).
PKGS_TEST := jq gojq sqlite3 valgrind clang libclang-rt-14-dev procps iproute2 util-linux python3-pip $(PKG_NPM) \
	bubblewrap hyperfine wrk curl libpython3.11-testsuite chromium
# The egress proxy's tests reach a small internet of their own (t/net:
# a DNS server, a CA of its own, HTTPS servers with a pip and an npm index
# and a git repository, all in a network namespace of the test's).
PKGS_TEST += dnsmasq-base openssl git
# The docker backend's tests run against a real engine (t/docker/engine).
PKGS_TEST += docker.io
# The guest suites boot Debian 12's kernel under QEMU (t/guest/run); its
# init is linked statically.
PKGS_TEST += qemu-system-x86 cpio
# Scaling out is tested on the engines users have: a single-node Slurm with
# munge (t/slurm/cluster), GNU parallel over sshd on localhost (t/ssh/server);
# the Kubernetes manifest is checked as YAML (t/k8s/check-manifest).
PKGS_TEST += slurm-wlm munge parallel openssh-server openssh-client python3-yaml
# The Debian package, checked by lintian, installed in a fresh Debian root
# (mmdebstrap) and booted under systemd there (systemd-nspawn); zsh to
# check its completion.
PKGS_TEST += lintian mmdebstrap systemd-container zsh

# The image for Apple Silicon (make image-arm64, image-slim-arm64) and its
# proof in an arm64 guest (make check-arm64): arm64 programs run here
# under qemu-user (build-aux/emulate), mmdebstrap makes arm64 roots (with
# arch-test, which it asks for another architecture), QEMU boots the guest.
PKGS_ARM64 := qemu-user-static arch-test mmdebstrap qemu-system-arm
# The arm64 root (build/arm64/root): what make deb needs there, and the guest's
# Docker engine (Node, for the MCP SDK's client, is among the first).
PKGS_ARM64_ROOT := $(PKGS_BUILD) $(PKGS_RUN) $(PKGS_DEB) git docker.io mount

# "a, b, c" for a control field.
comma := ,
space := $(subst ,, )
pkgs_commas = $(subst $(space),$(comma)$(space),$(strip $(1)))
