import Foundation
import Testing
import FamilySync

/// No tool lets libcrypto free OpenSSL's state from an exit handler
/// (SystemGlue's openssl_lifetime.c): a thread of the tool still ending after that cleanup
/// leaks its error queue, which LeakSanitizer reports (serve, stopped by
/// SIGTERM, did so on a loaded machine), and one still using OpenSSL would
/// use freed state. Whether a process registers the handler is watched
/// directly: a preloaded library wraps `__cxa_atexit` and writes down every
/// handler that lies in libcrypto or libssl. A control program that lets
/// OpenSSL initialise itself shows that the watcher sees the handler.
@Suite struct OpenSSLAtExitTests {
    static let watcherSource = """
    #define _GNU_SOURCE
    #include <dlfcn.h>
    #include <fcntl.h>
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>
    #include <unistd.h>
    int __cxa_atexit(void (*f)(void *), void *arg, void *dso) {
        static int (*real)(void (*)(void *), void *, void *);
        if (!real) real = (int (*)(void (*)(void *), void *, void *))dlsym(RTLD_NEXT, "__cxa_atexit");
        Dl_info i;
        const char *log = getenv("OPENSSL_EXIT_WATCH_LOG");
        if (log && dladdr((void *)f, &i) && i.dli_fname && (strstr(i.dli_fname, "libcrypto") || strstr(i.dli_fname, "libssl"))) {
            char line[512];
            int n = snprintf(line, sizeof line, "%d %s %s\\n", (int)getpid(), i.dli_sname ? i.dli_sname : "?", i.dli_fname);
            int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0600);
            if (fd >= 0) { if (n > 0) (void)!write(fd, line, (size_t)n); close(fd); }
        }
        return real(f, arg, dso);
    }
    """

    /// Lets OpenSSL initialise itself with its defaults, as any program's
    /// first digest does (options 0 would ask for nothing and return at once).
    static let controlSource = """
    #include <openssl/crypto.h>
    int main(void) { return OPENSSL_init_crypto(OPENSSL_INIT_ADD_ALL_DIGESTS, NULL) == 1 ? 0 : 1; }
    """

    /// The C compiler that comes with the Swift toolchain (or the system's).
    static func compiler() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for name in ["clang", "cc"] {
            for dir in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(dir)/\(name)") {
                return "\(dir)/\(name)"
            }
        }
        throw HarnessError("no C compiler (clang or cc) on PATH to build the exit-handler watcher")
    }

    static func compile(_ source: String, _ args: [String], in dir: TempDir, name: String) throws -> String {
        let src = dir.write("\(name).c", source)
        let out = dir.file(name)
        let r = try Tools.run(try compiler(), ["-o", out, src] + args)
        guard r.status == 0 else { throw HarnessError("cannot build \(name): \(r.err)") }
        return out
    }

    /// A program in which a thread key made before OpenSSL's set-up is
    /// deleted after it, and three threads then use the error queue and end.
    /// It is built with the project's set-up (SETUP, openssl_lifetime.c) or,
    /// as the control, with a bare one that keeps the state until exit but
    /// makes no early error key (BARE).
    static let threadEndSource = """
    #ifdef BARE
    #include <openssl/crypto.h>
    __attribute__((constructor)) static void bare(void) { OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL); }
    #else
    #include SETUP
    __attribute__((constructor)) static void ours(void) { fs_openssl_set_up(); }
    #endif
    #include <openssl/err.h>
    #include <pthread.h>
    static pthread_key_t early;
    __attribute__((constructor(101))) static void make_early_key(void) { pthread_key_create(&early, NULL); }
    static void *work(void *unused) { (void)unused; ERR_set_mark(); ERR_pop_to_mark(); return NULL; }
    int main(void) {
        pthread_key_delete(early);
        for (int i = 0; i < 3; i++) { pthread_t t; pthread_create(&t, NULL, work, NULL); pthread_join(t, NULL); }
        return 0;
    }
    """

    /// A thread that ends frees its OpenSSL error queue even when another
    /// library freed a thread key between OpenSSL's set-up and the queue's
    /// first use. The bare set-up, the control, loses one queue per thread.
    @Test func aThreadThatEndsFreesItsErrorQueueWhateverKeysWereFreedBefore() throws {
        let dir = TempDir()
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let setup = root.appendingPathComponent("Sources/SystemGlue/openssl_lifetime.c").path
        let include = root.appendingPathComponent("Sources/SystemGlue/include").path
        let flags = ["-fsanitize=address", "-I", include, "-lssl", "-lcrypto", "-lpthread"]
        let bare = try Self.compile(Self.threadEndSource, ["-DBARE"] + flags, in: dir, name: "bare")
        let ours = try Self.compile(Self.threadEndSource, ["-DSETUP=\"\(setup)\""] + flags, in: dir, name: "ours")
        // The sanitizer's own settings for these two alone: reports on stderr, no suppressions.
        let env = ["ASAN_OPTIONS": "detect_leaks=1", "LSAN_OPTIONS": "suppressions="]
        let control = try Tools.run(bare, env: env)
        #expect(control.status != 0 && control.err.contains("LeakSanitizer: detected memory leaks"), "the control lost no error queue: \(control.err)")
        let r = try Tools.run(ours, env: env)
        #expect(r.status == 0, "\(r.err)")
    }

    @Test func noToolLetsOpenSSLFreeItsStateAtExit() throws {
        let dir = TempDir()
        let watcher = try Self.compile(Self.watcherSource, ["-shared", "-fPIC", "-ldl"], in: dir, name: "watch.so")
        let control = try Self.compile(Self.controlSource, ["-lcrypto"], in: dir, name: "control")
        let log = dir.file("exit-handlers.log")
        let env = ["LD_PRELOAD": watcher, "OPENSSL_EXIT_WATCH_LOG": log]
        func handlers() -> [String] {
            String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self).split(separator: "\n").map(String.init)
        }

        // The watcher sees OpenSSL's own handler in a program that leaves it on.
        #expect(try Tools.run(control, env: env).status == 0)
        let seen = handlers()
        #expect(seen.contains { $0.contains("OPENSSL_cleanup") }, "the watcher saw no exit handler from libcrypto: \(seen)")
        try? FileManager.default.removeItem(atPath: log)

        // Every tool, each doing work that goes through OpenSSL.
        let owner = dir.file("owner.db"), kid = dir.file("kid.db"), png = dir.file("offer.png")
        let offer = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir, env: env)
        let join = try Tools.run("peer-sync", ["join", "--db", kid, "--connect", server.address], input: offer + "\n", env: env)
        #expect(join.status == 0, "\(join.err)")
        let stamp = try Tools.run("merge-records", ["--db", kid, "--stamp"], input: #"{"id":"r-1","type":"receipt","data":{"total":"1.00"}}"# + "\n", env: env)
        #expect(stamp.status == 0, "\(stamp.err)")
        let connect = try Tools.run("peer-sync", ["connect", "--db", kid, server.address], env: env)
        #expect(connect.status == 0, "\(connect.err)")
        // serve's exit after SIGTERM, with its threads ending: the path that leaked.
        #expect(server.stop() == 143, "\(server.err)")

        let qr = try Tools.run("pair-qr", ["--db", owner, "-o", png], env: env)
        #expect(qr.status == 0, "\(qr.err)")
        let scan = try Tools.run("pair-scan", [png], env: env)
        #expect(scan.status == 0, "\(scan.err)")
        let vectors = JWSVerifyTests.vectors
        let proof = try String(contentsOfFile: vectors + "/transactionInfo.jws", encoding: .utf8)
        let verify = try Tools.run("jws-verify", ["--root", vectors + "/testCA.der", "--bundle-id", "com.example", "--allow-sandbox",
                                                  "--now", "2026-11-30T10:00:00Z"], input: proof, env: env)
        #expect(verify.status == 0, "\(verify.err)")
        let gc = try Tools.run("tombstone-gc", ["--db", kid], env: env)
        #expect(gc.status == 0, "\(gc.err)")

        #expect(handlers() == [], "a tool registered OpenSSL's exit handler")
    }
}
