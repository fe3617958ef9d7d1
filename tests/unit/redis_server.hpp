#pragma once

// One redis-server of its own (Debian's), on a unix socket in a fresh
// folder, for the tests of what keeps state in Redis; or also on a TLS port
// of loopback, with certificates made by the openssl CLI.
#include "config/config.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#ifdef GATEHOUSE_REDIS_SERVER

namespace gatehouse::test {

#ifdef GATEHOUSE_OPENSSL_CLI

// Made once per run in a folder of their own: a CA; a server certificate it
// signed for localhost and 127.0.0.1; a client certificate it signed; and a
// second CA with a client certificate of its own, trusted by nobody here.
struct TestCertificates {
    std::filesystem::path dir;
    std::filesystem::path ca, ca_key, server_cert, server_key, client_cert, client_key;
    std::filesystem::path other_ca, other_ca_key, other_client_cert, other_client_key;

    TestCertificates() {
        dir = std::filesystem::temp_directory_path() / ("gatehouse-certs-" + std::to_string(::getpid()));
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir);
        ca = dir / "ca.pem", ca_key = dir / "ca.key";
        server_cert = dir / "server.pem", server_key = dir / "server.key";
        client_cert = dir / "client.pem", client_key = dir / "client.key";
        other_ca = dir / "other-ca.pem", other_ca_key = dir / "other-ca.key";
        other_client_cert = dir / "other-client.pem", other_client_key = dir / "other-client.key";
        make_ca(ca, ca_key, "Gatehouse test CA");
        make_ca(other_ca, other_ca_key, "Gatehouse untrusted CA");
        std::ofstream(dir / "server.ext")
            << "basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n";
        std::ofstream(dir / "client.ext") << "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n";
        make_signed(server_cert, server_key, "localhost", ca, ca_key, dir / "server.ext");
        make_signed(client_cert, client_key, "gatehouse", ca, ca_key, dir / "client.ext");
        make_signed(other_client_cert, other_client_key, "gatehouse", other_ca, other_ca_key, dir / "client.ext");
    }
    ~TestCertificates() { std::filesystem::remove_all(dir); }

private:
    static void run(const std::string& command) {
        INFO(command);
        REQUIRE(std::system((command + " >/dev/null 2>&1").c_str()) == 0);
    }
    static std::string quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }
    static std::string new_key() { return " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"; }

    static void make_ca(const std::filesystem::path& cert, const std::filesystem::path& key, const std::string& name) {
        run(std::string(GATEHOUSE_OPENSSL_CLI) + " req -x509" + new_key() + " -keyout " + quoted(key) + " -out " +
            quoted(cert) + " -days 2 -subj '/CN=" + name + "'");
    }

    void make_signed(const std::filesystem::path& cert, const std::filesystem::path& key, const std::string& name,
                     const std::filesystem::path& ca_cert, const std::filesystem::path& ca_key_file,
                     const std::filesystem::path& extensions) const {
        const auto request = dir / (cert.stem().string() + ".csr");
        run(std::string(GATEHOUSE_OPENSSL_CLI) + " req" + new_key() + " -keyout " + quoted(key) + " -out " +
            quoted(request) + " -subj '/CN=" + name + "'");
        run(std::string(GATEHOUSE_OPENSSL_CLI) + " x509 -req -in " + quoted(request) + " -CA " + quoted(ca_cert) +
            " -CAkey " + quoted(ca_key_file) + " -CAcreateserial -out " + quoted(cert) + " -days 2 -extfile " +
            quoted(extensions));
    }
};

inline const TestCertificates& test_certificates() {
    static const TestCertificates certificates;
    return certificates;
}

#endif

// A TLS port for redis-server, free when asked.
inline int free_loopback_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    ::close(fd);
    return ntohs(address.sin_port);
}

// How a RedisServer speaks TLS: on a port of 127.0.0.1 of its own, with
// test_certificates()' server certificate, asking clients for one signed by
// its CA when client_certificates is set.
struct RedisTls {
    bool client_certificates = false;
};

// One redis-server of its own, stopped with the test.
class RedisServer {
public:
    explicit RedisServer(std::string password = {}) : password_(std::move(password)) { open(); }

    // Also serving TLS on 127.0.0.1 (the unix socket stays, for seeing it up).
    explicit RedisServer(RedisTls tls, std::string password = {})
        : password_(std::move(password)), tls_(tls), tls_port_(free_loopback_port()) {
        open();
    }
    ~RedisServer() {
        stop();
        std::filesystem::remove_all(dir_);
    }

    void start() {
        std::vector<std::string> args = {
            GATEHOUSE_REDIS_SERVER, "--port", "0",     "--unixsocket", socket().string(), "--save", "",
            "--appendonly",         "no",     "--dir", dir_.string()};
        if (!password_.empty()) args.insert(args.end(), {"--requirepass", password_});
        if (tls_) {
#ifdef GATEHOUSE_OPENSSL_CLI
            const auto& certs = test_certificates();
            args.insert(args.end(),
                        {"--bind", "127.0.0.1", "--tls-port", std::to_string(tls_port_), "--tls-cert-file",
                         certs.server_cert.string(), "--tls-key-file", certs.server_key.string(), "--tls-ca-cert-file",
                         certs.ca.string(), "--tls-auth-clients", tls_->client_certificates ? "yes" : "no"});
#else
            FAIL("TLS tests need the openssl command");
#endif
        }
        pid_ = ::fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            // A test that aborts (a sanitizer report) runs no destructor: the
            // server goes with it instead of holding the test's pipes open.
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            std::vector<char*> argv;
            for (auto& a : args)
                argv.push_back(a.data());
            argv.push_back(nullptr);
            // A test that dies takes its Redis along.
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            const int devnull = ::open("/dev/null", O_WRONLY);
            ::dup2(devnull, STDOUT_FILENO);
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        // The socket file appears at bind(), before Redis listens on it:
        // up is when a connection is taken.
        for (int i = 0; i < 500 && !accepts(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        REQUIRE(accepts());
    }

    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
        std::filesystem::remove(socket());
    }

    // A server that still holds its connections but answers nothing, and
    // one that answers again.
    void pause() {
        ::kill(pid_, SIGSTOP);
    }
    void resume() {
        ::kill(pid_, SIGCONT);
    }

    std::filesystem::path socket() const {
        return dir_ / "redis.sock";
    }
    std::filesystem::path dir() const {
        return dir_;
    }
    int tls_port() const {
        return tls_port_;
    }

    // The unix socket; for a TLS server its rediss:// URL on 127.0.0.1,
    // trusting test_certificates()' CA.
    config::RedisSettings settings(std::string prefix = "test:") const {
        config::RedisSettings s;
        s.url = "unix://" + socket().string();
        s.key_prefix = std::move(prefix);
        s.command_timeout_ms = 2000;
#ifdef GATEHOUSE_OPENSSL_CLI
        if (tls_) {
            s.url = "rediss://127.0.0.1:" + std::to_string(tls_port_);
            s.tls.ca_file = test_certificates().ca;
        }
#endif
        return s;
    }

private:
    bool accepts() const {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return false;
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        const std::string path = socket().string();
        if (path.size() >= sizeof address.sun_path) {
            ::close(fd);
            return false;
        }
        std::copy(path.begin(), path.end(), address.sun_path);
        const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
        ::close(fd);
        return connected;
    }

    void open() {
        // As the host does (StopSignal): a write to a Redis that went away is
        // an error to handle, not a signal that ends the process.
        std::signal(SIGPIPE, SIG_IGN);
        dir_ = std::filesystem::temp_directory_path() /
               ("gatehouse-redis-" + std::to_string(::getpid()) + "-" + std::to_string(++count_));
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
        start();
    }

    static inline std::atomic<int> count_{0};
    std::string password_;
    std::optional<RedisTls> tls_;
    int tls_port_ = 0;
    std::filesystem::path dir_;
    pid_t pid_ = -1;
};

} // namespace gatehouse::test

#endif
