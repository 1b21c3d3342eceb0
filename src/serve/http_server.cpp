#include "serve/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fmt/format.h>

#include "util/error.h"

namespace ts::serve {
namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    default: return "Internal Server Error";
  }
}

void send_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    // MSG_NOSIGNAL: a scraper that hung up must not kill us with SIGPIPE.
    ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

}  // namespace

ListenAddress parse_listen(const std::string& text) {
  ListenAddress a;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw UserError(fmt::format("--listen {}: expected [IPv6]:PORT", text));
    a.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos) throw UserError(fmt::format("--listen {}: expected HOST:PORT, e.g. 127.0.0.1:9400", text));
    a.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535)
    throw UserError(fmt::format("--listen {}: '{}' is not a port number (0-65535)", text, port));
  a.port = static_cast<int>(p);
  return a;
}

HttpServer::HttpServer(const std::string& listen) {
  ListenAddress la = parse_listen(listen);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port = std::to_string(la.port);
  int rc = getaddrinfo(la.host.empty() ? nullptr : la.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || !res) throw UserError(fmt::format("--listen {}: cannot resolve '{}': {}", listen, la.host, gai_strerror(rc)));
  int err = 0;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 64) == 0) {
      listen_fd_ = fd;
      break;
    }
    err = errno;
    close(fd);
  }
  freeaddrinfo(res);
  if (listen_fd_ < 0) {
    if (err == EADDRINUSE)
      throw UserError(fmt::format("{}: port {} is already in use (another trainscope serve, or dcgm-exporter on 9400?): "
                                  "pick another with --listen HOST:PORT", listen, la.port));
    if (err == EACCES)
      throw UserError(fmt::format("{}: permission denied (ports below 1024 need root): pick a port above 1024", listen));
    if (err == EADDRNOTAVAIL)
      throw UserError(fmt::format("{}: {} is not an address of this machine", listen, la.host));
    throw UserError(fmt::format("{}: cannot listen: {}", listen, std::strerror(err)));
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  char host[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
    port_ = ntohs(s6->sin6_port);
    inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
    address_ = fmt::format("[{}]:{}", host, port_);
  } else {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
    port_ = ntohs(s4->sin_port);
    inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
    address_ = fmt::format("{}:{}", host, port_);
  }
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(listen_fd_);
    throw UserError(fmt::format("pipe: {}", std::strerror(errno)));
  }
}

HttpServer::~HttpServer() {
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_[0] >= 0) close(wake_[0]);
  if (wake_[1] >= 0) close(wake_[1]);
}

void HttpServer::stop() {
  stop_ = true;
  if (wake_[1] >= 0) (void)!write(wake_[1], "x", 1);
}

void HttpServer::serve(const HttpHandler& handler) {
  while (!stop_) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    int n = poll(fds, 2, 1000);
    if (n < 0 && errno != EINTR) throw UserError(fmt::format("poll: {}", std::strerror(errno)));
    if (stop_ || (n > 0 && fds[1].revents)) break;
    if (n <= 0 || !(fds[0].revents & POLLIN)) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    answer(fd, handler);
    close(fd);
  }
}

void HttpServer::answer(int fd, const HttpHandler& handler) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::seconds(5);
  std::string req;
  while (req.find("\r\n\r\n") == std::string::npos && req.find("\n\n") == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0 || req.size() > 8192) {
      send_all(fd, "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[2048];
    ssize_t got = recv(fd, buf, sizeof(buf), 0);
    if (got <= 0) return;  // the client went away
    req.append(buf, static_cast<size_t>(got));
  }
  // Request line: METHOD SP target SP version
  auto eol = req.find_first_of("\r\n");
  std::string line = req.substr(0, eol);
  auto sp1 = line.find(' ');
  auto sp2 = line.find(' ', sp1 + 1);
  HttpResponse resp;
  std::string method;
  if (sp1 == std::string::npos || sp2 == std::string::npos) {
    resp.status = 400;
    resp.body = "bad request line\n";
  } else {
    method = line.substr(0, sp1);
    std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    std::string path = target.substr(0, target.find('?'));
    if (method != "GET" && method != "HEAD") {
      resp.status = 405;
      resp.body = "only GET and HEAD\n";
    } else {
      try {
        resp = handler(method, path);
      } catch (const std::exception& e) {
        resp.status = 500;
        resp.body = std::string("internal error: ") + e.what() + "\n";
      }
    }
  }
  std::string head = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                 resp.status, reason_phrase(resp.status), resp.content_type, resp.body.size());
  send_all(fd, method == "HEAD" ? head : head + resp.body);
}

}  // namespace ts::serve
