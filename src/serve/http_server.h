#pragma once
// A small HTTP/1.1 server for /metrics: one listening socket, requests answered one at a
// time on the calling thread (Prometheus scrapes are sequential and small), every
// connection closed after its answer. Loopback unless told otherwise. Bounded: a client
// gets 5 s to send its request line and headers (8 KiB at most), then it is dropped.
#include <atomic>
#include <functional>
#include <string>

namespace ts::serve {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};
using HttpHandler = std::function<HttpResponse(const std::string& method, const std::string& path)>;

// "127.0.0.1:9400", "localhost:9400", ":9400" (all interfaces), "[::1]:9400", "0.0.0.0:9400".
struct ListenAddress {
  std::string host;  // as given ("" = all interfaces)
  int port = 0;
};
// Throws ts::UserError on a malformed address.
ListenAddress parse_listen(const std::string& text);

class HttpServer {
 public:
  // Binds and listens; throws ts::UserError with one clear line when the port is taken,
  // the address is not local, or permission is denied. Port 0 picks a free port.
  explicit HttpServer(const std::string& listen);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  const std::string& address() const { return address_; }  // "127.0.0.1:9400"

  // Serves until stop() (from another thread or a signal handler: it only writes a byte
  // to a pipe).
  void serve(const HttpHandler& handler);
  void stop();

 private:
  void answer(int fd, const HttpHandler& handler);
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = 0;
  std::string address_;
  std::atomic<bool> stop_{false};
};

}  // namespace ts::serve
