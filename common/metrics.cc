#include "common/metrics.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"

namespace pkforge {

void Metrics::Declare(const std::string& name, const std::string& type, const std::string& help,
                      std::vector<double> buckets) {
  std::lock_guard lock(mu_);
  Family& f = families_[name];
  if (!f.type.empty()) return;
  f.type = type;
  f.help = help;
  f.buckets = std::move(buckets);
}

void Metrics::Add(const std::string& name, double value, const std::string& labels) {
  std::lock_guard lock(mu_);
  families_[name].values[labels] += value;
}

void Metrics::Set(const std::string& name, double value, const std::string& labels) {
  std::lock_guard lock(mu_);
  families_[name].values[labels] = value;
}

void Metrics::Observe(const std::string& name, double value, const std::string& labels) {
  std::lock_guard lock(mu_);
  Family& f = families_[name];
  Histogram& h = f.histograms[labels];
  if (h.counts.size() != f.buckets.size()) h.counts.assign(f.buckets.size(), 0);
  for (size_t i = 0; i < f.buckets.size(); ++i)
    if (value <= f.buckets[i]) {
      h.counts[i] += 1;
      break;
    }
  h.sum += value;
  h.count += 1;
}

void Metrics::SetCallback(const std::string& name, std::function<double()> fn,
                          const std::string& labels) {
  std::lock_guard lock(mu_);
  families_[name].callbacks[labels] = std::move(fn);
}

void Metrics::SetFamilyCallback(const std::string& name,
                                std::function<std::map<std::string, double>()> fn) {
  std::lock_guard lock(mu_);
  families_[name].family_callback = std::move(fn);
}

double Metrics::Get(const std::string& name, const std::string& labels) const {
  std::function<double()> series_fn;
  std::function<std::map<std::string, double>()> family_fn;
  {
    std::lock_guard lock(mu_);
    auto it = families_.find(name);
    if (it == families_.end()) return 0;
    const Family& f = it->second;
    if (auto cb = f.callbacks.find(labels); cb != f.callbacks.end()) {
      series_fn = cb->second;
    } else if (f.family_callback) {
      family_fn = f.family_callback;
    } else {
      auto v = f.values.find(labels);
      return v == f.values.end() ? 0 : v->second;
    }
  }
  // Outside mu_ (see the header): the callback may take its owner's locks.
  if (series_fn) return series_fn();
  const std::map<std::string, double> values = family_fn();
  auto v = values.find(labels);
  return v == values.end() ? 0 : v->second;
}

namespace {
std::string Series(const std::string& name, const std::string& labels,
                   const std::string& extra = "") {
  std::string l = labels;
  if (!extra.empty()) l = l.empty() ? extra : absl::StrCat(l, ",", extra);
  return l.empty() ? name : absl::StrCat(name, "{", l, "}");
}
std::string Num(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return absl::StrFormat("%.15g", v);
}
}  // namespace

std::string Metrics::Render() const {
  // Render from a copy so callbacks run outside mu_ (see the header); scrapes
  // are rare and the registry is small, so the copy is cheap.
  std::map<std::string, Family> families;
  {
    std::lock_guard lock(mu_);
    families = families_;
  }
  std::string out;
  for (const auto& [name, f] : families) {
    absl::StrAppend(&out, "# HELP ", name, " ", f.help, "\n# TYPE ", name, " ",
                    f.type.empty() ? "untyped" : f.type, "\n");
    for (const auto& [labels, v] : f.values) absl::StrAppend(&out, Series(name, labels), " ", Num(v), "\n");
    for (const auto& [labels, fn] : f.callbacks)
      absl::StrAppend(&out, Series(name, labels), " ", Num(fn()), "\n");
    if (f.family_callback) {
      for (const auto& [labels, v] : f.family_callback())
        absl::StrAppend(&out, Series(name, labels), " ", Num(v), "\n");
    }
    for (const auto& [labels, h] : f.histograms) {
      double cumulative = 0;
      for (size_t i = 0; i < f.buckets.size(); ++i) {
        cumulative += i < h.counts.size() ? h.counts[i] : 0;
        absl::StrAppend(&out, Series(name + "_bucket", labels, absl::StrCat("le=\"", Num(f.buckets[i]), "\"")),
                        " ", Num(cumulative), "\n");
      }
      absl::StrAppend(&out, Series(name + "_bucket", labels, "le=\"+Inf\""), " ", Num(h.count), "\n");
      absl::StrAppend(&out, Series(name + "_sum", labels), " ", Num(h.sum), "\n");
      absl::StrAppend(&out, Series(name + "_count", labels), " ", Num(h.count), "\n");
    }
  }
  return out;
}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& host_port, const Metrics* metrics) {
  const auto colon = host_port.rfind(':');
  if (colon == std::string::npos)
    return absl::InvalidArgumentError(absl::StrCat("metrics address '", host_port, "': want HOST:PORT"));
  std::string host = host_port.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  const std::string port = host_port.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return absl::InvalidArgumentError(absl::StrCat("metrics address '", host_port, "': ", gai_strerror(rc)));
  std::unique_ptr<MetricsHttpServer> s(new MetricsHttpServer());
  s->metrics_ = metrics;
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 16) != 0) {
    const int err = errno;
    freeaddrinfo(res);
    if (fd >= 0) close(fd);
    return ErrnoError(absl::StrCat("metrics endpoint ", host_port), err);
  }
  freeaddrinfo(res);
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  s->port_ = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  s->listen_fd_ = fd;
  if (pipe2(s->wake_fd_, O_CLOEXEC) != 0) return ErrnoError("metrics endpoint pipe", errno);
  s->thread_ = std::thread([p = s.get()] { p->Serve(); });
  return s;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (wake_fd_[1] >= 0) (void)!write(wake_fd_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  for (int fd : {listen_fd_, wake_fd_[0], wake_fd_[1]})
    if (fd >= 0) close(fd);
}

void MetricsHttpServer::Serve() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    const int c = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    // One short request per connection; a slow client gets 2 s.
    timeval tv{2, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    std::string req;
    char buf[2048];
    while (req.find("\r\n\r\n") == std::string::npos && req.size() < 16384) {
      const ssize_t n = recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      req.append(buf, static_cast<size_t>(n));
    }
    std::string status = "200 OK", type = "text/plain; version=0.0.4", body;
    if (req.rfind("GET /metrics", 0) == 0) {
      body = metrics_->Render();
    } else if (req.rfind("GET /healthz", 0) == 0) {
      body = "ok\n";
    } else {
      status = "404 Not Found";
      body = "not found\n";
    }
    const std::string resp = absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", type,
                                          "\r\nContent-Length: ", body.size(),
                                          "\r\nConnection: close\r\n\r\n", body);
    size_t off = 0;
    while (off < resp.size()) {
      const ssize_t n = send(c, resp.data() + off, resp.size() - off, MSG_NOSIGNAL);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(c);
  }
}

}  // namespace pkforge
