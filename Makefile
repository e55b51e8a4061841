# family-sync: `make demo` and `make test` are the two commands a new user runs.
SWIFT ?= swift
PREFIX ?= /usr/local
TOOLS := jws-verify pair-qr pair-scan merge-records peer-sync tombstone-gc
UNITS := peer-sync.service tombstone-gc.service tombstone-gc.timer
UNITDIR ?= $(PREFIX)/lib/systemd/user
# Release tools link the Swift runtime and Foundation statically: a tool that
# runs at every app launch (jws-verify) starts in a few milliseconds instead of
# loading some thirty shared libraries first.
RELEASE_FLAGS := -c release --static-swift-stdlib
RELEASE_BIN = $(shell $(SWIFT) build $(RELEASE_FLAGS) --show-bin-path 2>/dev/null)
DEBUG_BIN = $(shell $(SWIFT) build --show-bin-path 2>/dev/null)

.PHONY: all build deps test-deps bench-deps demo test c-warnings check-dependent test-asan test-tsan fuzz bench man install install-units uninstall clean

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
build: deps
	@SWIFT=$(SWIFT) bash scripts/swift-build.sh $(RELEASE_FLAGS)

demo: build
	$(call apt_install,packages/apt-demo.txt)
	@bash scripts/demo.sh "$(RELEASE_BIN)"

# The unit tests run in the debug build (assertions on); the end-to-end suite
# runs the release tools, the binaries `make install` puts on users' machines.
test: test-deps c-warnings
	@SWIFT=$(SWIFT) bash scripts/swift-build.sh --build-tests
	@SWIFT=$(SWIFT) bash scripts/swift-build.sh $(RELEASE_FLAGS)
	$(SWIFT) test --skip-build --skip EndToEndTests
	@test -x "$(RELEASE_BIN)/peer-sync" || { echo "no release tools in '$(RELEASE_BIN)'"; exit 1; }
	FAMILY_SYNC_BIN="$(RELEASE_BIN)" $(SWIFT) test --skip-build --filter EndToEndTests

# The C glue must compile without a warning (SwiftPM builds it without -Wall).
C_SOURCES := $(wildcard Sources/JPEGGlue/*.c)
CXX_SOURCES := $(wildcard Sources/ZXingBridge/*.cpp)
c-warnings: deps
	@for f in $(C_SOURCES); do \
	    $${CC:-cc} -std=c11 -Wall -Wextra -Werror -fsyntax-only -ISources/JPEGGlue/include $$f || exit 1; \
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

bench: bench-deps build
	@bash bench/run.sh "$(RELEASE_BIN)"

# Regenerates man pages and completion scripts from the command declarations.
man:
	$(SWIFT) build
	@for t in $(TOOLS); do \
	    $(DEBUG_BIN)/$$t --generate-manpage > man/man1/$$t.1; \
	    $(DEBUG_BIN)/$$t --generate-completion bash > completions/bash/$$t; \
	    $(DEBUG_BIN)/$$t --generate-completion zsh > completions/zsh/_$$t; \
	    $(DEBUG_BIN)/$$t --generate-completion fish > completions/fish/$$t.fish; \
	done

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man7 \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
	    $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	for t in $(TOOLS); do \
	    install -m 755 $(RELEASE_BIN)/$$t $(DESTDIR)$(PREFIX)/bin/$$t; \
	    install -m 644 man/man1/$$t.1 $(DESTDIR)$(PREFIX)/share/man/man1/$$t.1; \
	    install -m 644 completions/bash/$$t $(DESTDIR)$(PREFIX)/share/bash-completion/completions/$$t; \
	    install -m 644 completions/zsh/_$$t $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_$$t; \
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
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions/$$t $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_$$t \
	    $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/$$t.fish; done
	rm -f $(DESTDIR)$(PREFIX)/share/man/man7/family-sync.7
	for u in $(UNITS); do rm -f $(DESTDIR)$(UNITDIR)/$$u; done

clean:
	$(SWIFT) package clean
