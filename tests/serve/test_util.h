#pragma once
// Helpers for the serve tests: run a command, a minimal HTTP GET on loopback, a free port.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace ts::test {

struct CmdResult {
  int status = -1;
  std::string out;
};

inline CmdResult run_cmd(const std::string& cmd) {
  CmdResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// GET http://127.0.0.1:port/path; returns "" on any failure. status gets the HTTP status.
inline std::string http_get(int port, const std::string& path, int* status = nullptr) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return {};
  }
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return {};
  }
  std::string resp;
  char buf[8192];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) resp.append(buf, static_cast<size_t>(n));
  close(fd);
  auto sp = resp.find(' ');
  if (status && sp != std::string::npos) *status = std::atoi(resp.c_str() + sp + 1);
  auto body = resp.find("\r\n\r\n");
  return body == std::string::npos ? std::string() : resp.substr(body + 4);
}

// promtool check metrics on `text`. Its linter rejects camelCase label names, and
// dcgm-exporter's `modelName` (which we copy so dashboards and joins line up) is one: the
// check runs on the text with that one label renamed, and `camel_only` says whether every
// complaint about the original text was that one.
struct Lint {
  int status = -1;       // promtool's exit status on the text with modelName -> model_name
  std::string out;       // its output (empty when clean)
  bool camel_only = false;
};
inline Lint promtool_lint(std::string text) {
  auto run = [](const std::string& t) {
    char path[] = "/tmp/ts_serve_lint_XXXXXX";
    int fd = mkstemp(path);
    size_t off = 0;
    while (off < t.size()) {
      ssize_t n = write(fd, t.data() + off, t.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fd);
    auto r = run_cmd(std::string("promtool check metrics < ") + path + " 2>&1");
    unlink(path);
    return r;
  };
  Lint l;
  auto original = run(text);
  l.camel_only = true;
  size_t start = 0;
  while (start < original.out.size()) {
    size_t nl = original.out.find('\n', start);
    std::string line = original.out.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (!line.empty() && line.find("not 'camelCase'") == std::string::npos) l.camel_only = false;
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  for (size_t p; (p = text.find("modelName=")) != std::string::npos;) text.replace(p, 10, "model_name=");
  auto renamed = run(text);
  l.status = renamed.status;
  l.out = renamed.out;
  return l;
}

// A loopback port nobody listens on right now.
inline int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

}  // namespace ts::test
