# family-sync: `make demo` and `make test` are the two commands a new user runs.
SWIFT ?= swift
PREFIX ?= /usr/local
TOOLS := jws-verify pair-qr pair-scan merge-records peer-sync tombstone-gc
# The six tools are links to two binaries (Sources/family-sync, Sources/family-sync-qr):
# one Swift runtime each instead of six, and only the QR pair loads the image libraries.
CORE_TOOLS := jws-verify merge-records peer-sync tombstone-gc
QR_TOOLS := pair-qr pair-scan
UNITS := peer-sync.service peer-sync-stdio.socket peer-sync-stdio@.service tombstone-gc.service tombstone-gc.timer
UNITDIR ?= $(PREFIX)/lib/systemd/user
LIBEXECDIR ?= $(PREFIX)/libexec/family-sync
ZSHDIR ?= $(PREFIX)/share/zsh/site-functions
# Release tools link the Swift runtime and FoundationEssentials statically: a
# tool that runs at every app launch (jws-verify) starts in a few milliseconds
# instead of loading some thirty shared libraries first, and the machine needs
# no Swift runtime. They look for libraries only where the system does (no
# $ORIGIN run path) and bind every symbol at start (-z now, so the GOT can be
# read-only). They export no symbols of their own (--no-export-dynamic: no
# library looks them up, and the loader's table stays small). Installed, they
# are stripped of symbols and debug data.
RELEASE_FLAGS := -c release --static-swift-stdlib --disable-local-rpath -Xlinker -z -Xlinker now -Xlinker --no-export-dynamic
STRIP ?= strip
VERSION := $(shell sed -n 's/.*static let version = "\(.*\)"/\1/p' Sources/FamilySync/Support/Version.swift)
DEB := .build/deb/family-sync_$(VERSION)_amd64.deb
RELEASE_BIN = $(shell $(SWIFT) build $(RELEASE_FLAGS) --show-bin-path 2>/dev/null)
DEBUG_BIN = $(shell $(SWIFT) build --show-bin-path 2>/dev/null)

.PHONY: all build deps test-deps bench-deps demo test c-warnings check-dependent test-asan test-tsan fuzz bench man install install-units uninstall stage deb clean

all: build

# Installs the Debian packages listed in packages/*.txt that are missing
# (sudo when not root), starting no service on the host (scripts/apt-install.sh).
define apt_install
	@sh scripts/apt-install.sh $(1)
endef

deps:
	$(call apt_install,packages/apt-build.txt)

test-deps: deps
	$(call apt_install,packages/apt-test.txt)
	@test -x .build/test-venv/bin/python || python3 -m venv .build/test-venv
	@.build/test-venv/bin/pip install -q --disable-pip-version-check -r packages/pip-test.txt \
	    || echo "make: pip could not install packages/pip-test.txt; the tests that need it are skipped and say why"

bench-deps: test-deps
	$(call apt_install,packages/apt-bench.txt)
	@test -x bench/.venv/bin/python || python3 -m venv bench/.venv
	@bench/.venv/bin/pip install -q -r packages/pip-bench.txt

# scripts/swift-build.sh fails on a warning in the project's own files.
# family-sync links libstdc++ statically (Package.swift): its archive, alone in a
# folder the release link searches first.
build: deps
	@a=$$($${CXX:-c++} -print-file-name=libstdc++.a); test -f "$$a" || { echo "make: no libstdc++.a (Debian's libstdc++-12-dev)" >&2; exit 1; }; \
	    mkdir -p .build/static-libstdc++ && ln -sfn "$$a" .build/static-libstdc++/libstdc++.a
	@SWIFT=$(SWIFT) bash scripts/swift-build.sh $(RELEASE_FLAGS)

demo: stage
	$(call apt_install,packages/apt-demo.txt)
	@bash scripts/demo.sh "$(CURDIR)/.build/stage/usr/bin"

# The tools as installed (stripped, links in bin), in .build/stage/usr, for the demo and the benchmarks.
stage: build
	@rm -rf .build/stage
	@$(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/.build/stage PREFIX=/usr >/dev/null

# The unit tests run in the debug build (assertions on); the end-to-end suite
# runs the tools from the Debian package's tree, as `make deb` built and
# packed them (stripped, six links to two binaries), and checks the package.
test: test-deps c-warnings
	@SWIFT=$(SWIFT) bash scripts/swift-build.sh --build-tests
	$(MAKE) --no-print-directory deb
	$(SWIFT) test --skip-build --skip EndToEndTests
	@test -x .build/deb/root/usr/bin/peer-sync || { echo "no tools in .build/deb/root/usr/bin"; exit 1; }
	FAMILY_SYNC_BIN="$(CURDIR)/.build/deb/root/usr/bin" FAMILY_SYNC_DEB="$(CURDIR)/$(DEB)" \
	    $(SWIFT) test --skip-build --filter EndToEndTests

# The C glue must compile without a warning (SwiftPM builds it without -Wall).
C_SOURCES := $(wildcard Sources/JPEGGlue/*.c Sources/SystemGlue/*.c)
CXX_SOURCES := $(wildcard Sources/ZXingBridge/*.cpp)
c-warnings: deps
	@for f in $(C_SOURCES); do \
	    $${CC:-cc} -std=c11 -Wall -Wextra -Werror -fsyntax-only -ISources/JPEGGlue/include -ISources/SystemGlue/include $$f || exit 1; \
	done
	@for f in $(CXX_SOURCES); do \
	    $${CXX:-c++} -std=c++17 -Wall -Wextra -Werror -fsyntax-only -ISources/ZXingBridge/include $$(pkg-config --cflags zxing) $$f || exit 1; \
	done

# A package depending on the FamilySync library builds (slow: not part of test).
check-dependent: deps
	@bash scripts/check-dependent.sh

# The test suite under AddressSanitizer (with LeakSanitizer) and under
# ThreadSanitizer, each in its own build folder (.build/asan, .build/tsan) so
# neither clobbers the normal build. Any sanitizer report, from the tests or
# from a tool they run, fails the run; leaks that are the toolchain's own are
# suppressed in scripts/sanitizers/lsan.supp, which gives the evidence.
test-asan: test-deps
	@bash scripts/test-sanitized.sh address

test-tsan: test-deps
	@bash scripts/test-sanitized.sh thread

# libFuzzer on every parser of outside bytes (Fuzzing/), FUZZ_SECONDS per
# target (default 60); fails on a crash, leak, timeout or out-of-memory.
fuzz: deps
	@bash scripts/fuzz.sh $(FUZZ_TARGETS)

bench: bench-deps stage
	@bash bench/run.sh "$(CURDIR)/.build/stage/usr/bin"

# Regenerates man pages and completion scripts from the command declarations.
man:
	$(SWIFT) build
	@for t in $(TOOLS); do \
	    case " $(QR_TOOLS) " in *" $$t "*) b=$(DEBUG_BIN)/family-sync-qr;; *) b=$(DEBUG_BIN)/family-sync;; esac; \
	    $$b $$t --generate-manpage > man/man1/$$t.1; \
	    $$b $$t --generate-completion bash > completions/bash/$$t; \
	    $$b $$t --generate-completion zsh > completions/zsh/_$$t; \
	    $$b $$t --generate-completion fish > completions/fish/$$t.fish; \
	done

# The binaries go to LIBEXECDIR, stripped; each tool in bin is a relative link
# to the one that carries it, so the tree can be moved (DESTDIR, a package).
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man7 \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(ZSHDIR) \
	    $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	for b in family-sync family-sync-qr; do \
	    install -m 755 $(RELEASE_BIN)/$$b $(DESTDIR)$(LIBEXECDIR)/$$b && \
	    $(STRIP) --strip-unneeded --remove-section=.comment --remove-section=.note $(DESTDIR)$(LIBEXECDIR)/$$b || exit 1; \
	done
	rel=$$(realpath -m --relative-to=$(PREFIX)/bin $(LIBEXECDIR)); \
	for t in $(CORE_TOOLS); do ln -sfn $$rel/family-sync $(DESTDIR)$(PREFIX)/bin/$$t; done; \
	for t in $(QR_TOOLS); do ln -sfn $$rel/family-sync-qr $(DESTDIR)$(PREFIX)/bin/$$t; done
	for t in $(TOOLS); do \
	    install -m 644 man/man1/$$t.1 $(DESTDIR)$(PREFIX)/share/man/man1/$$t.1; \
	    install -m 644 completions/bash/$$t $(DESTDIR)$(PREFIX)/share/bash-completion/completions/$$t; \
	    install -m 644 completions/zsh/_$$t $(DESTDIR)$(ZSHDIR)/_$$t; \
	    install -m 644 completions/fish/$$t.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/$$t.fish; \
	done
	install -m 644 man/man7/family-sync.7 $(DESTDIR)$(PREFIX)/share/man/man7/family-sync.7
	$(MAKE) --no-print-directory install-units

# systemd user units: peer-sync serve as a service, tombstone-gc on a daily timer.
install-units:
	install -d $(DESTDIR)$(UNITDIR)
	for u in $(UNITS); do \
	    sed 's|@BINDIR@|$(PREFIX)/bin|g' systemd/$$u > $(DESTDIR)$(UNITDIR)/$$u && chmod 644 $(DESTDIR)$(UNITDIR)/$$u; \
	done

uninstall:
	for t in $(TOOLS); do rm -f $(DESTDIR)$(PREFIX)/bin/$$t $(DESTDIR)$(PREFIX)/share/man/man1/$$t.1 \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions/$$t $(DESTDIR)$(ZSHDIR)/_$$t \
	    $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/$$t.fish; done
	rm -f $(DESTDIR)$(LIBEXECDIR)/family-sync $(DESTDIR)$(LIBEXECDIR)/family-sync-qr
	-rmdir $(DESTDIR)$(LIBEXECDIR) 2>/dev/null
	rm -f $(DESTDIR)$(PREFIX)/share/man/man7/family-sync.7
	for u in $(UNITS); do rm -f $(DESTDIR)$(UNITDIR)/$$u; done

# The Debian package, .build/deb/family-sync_VERSION_amd64.deb: `make install`
# into .build/deb/root with Debian's paths, then control data whose Depends
# dpkg-shlibdeps reads from the libraries the binaries link (scripts/make-deb.sh).
deb: build
	@rm -rf .build/deb/root
	@$(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/.build/deb/root PREFIX=/usr ZSHDIR=/usr/share/zsh/vendor-completions >/dev/null
	@bash scripts/make-deb.sh .build/deb/root $(VERSION) $(DEB)

clean:
	$(SWIFT) package clean
