// udt_peer: the reference UDT (UDT4, Debian's libudt-dev, 4.11) as one end of a ccarena flow.
//
// Built by ccarena's udp backend (python/ccarena/backends/udp/libudt.py) with
//   g++ -O2 -o udt_peer udt_peer.cpp -ludt -lpthread
// and run inside a flow's network namespace, one process per end:
//
//   udt_peer recv --bind ADDR --port P --t0-ns T0 --interval-ns I --duration-ns D --out FILE
//   udt_peer send --bind ADDR --peer ADDR --port P --t0-ns T0 --interval-ns I --duration-ns D
//                 --start-ns S [--stop-ns E] [--bytes N] [--mss-bytes M] [--flow-window P] --out FILE
//
// Both sample at t0 + k·interval on CLOCK_MONOTONIC (the clock the parent's t0 is on) and write one
// JSON object to FILE at their end: {"ok": true, "samples": [...], ...} or {"ok": false, "error": ...},
// the format of ccarena's kernel generator. The receiver prints "ready" once listening. Sender
// samples carry UDT's own view (UDT::perfmon): bytes sent (data packets × payload, retransmissions
// included), its smoothed RTT, congestion window, packets in flight and sending rate (1/period).
// SIGTERM or SIGINT ends either end early, with an error result (nothing made up).
#include <udt/udt.h>

#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// Sleep until monotonic time `t_ns`, waking every 50 ms to notice a stop signal.
// Returns false if a stop signal arrived.
bool sleep_until(int64_t t_ns) {
  while (!g_stop) {
    int64_t left = t_ns - now_ns();
    if (left <= 0) return true;
    int64_t step = std::min<int64_t>(left, 50000000);
    timespec ts{time_t(step / 1000000000LL), long(step % 1000000000LL)};
    nanosleep(&ts, nullptr);
  }
  return false;
}

double cpu_seconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct Args {
  std::map<std::string, std::string> kv;
  std::string get(const char* k, const char* dflt = nullptr) const {
    auto it = kv.find(k);
    if (it != kv.end()) return it->second;
    if (dflt) return dflt;
    fprintf(stderr, "udt_peer: missing --%s\n", k);
    exit(2);
  }
  int64_t num(const char* k, int64_t dflt) const {
    auto it = kv.find(k);
    return it == kv.end() || it->second.empty() ? dflt : strtoll(it->second.c_str(), nullptr, 10);
  }
};

void write_json(const std::string& path, const std::string& body) {
  std::string tmp = path + ".tmp";
  FILE* f = fopen(tmp.c_str(), "w");
  if (!f) return;
  fputs(body.c_str(), f);
  fclose(f);
  rename(tmp.c_str(), path.c_str());
}

std::string error_json(const std::string& what) {
  std::string clean;
  for (char c : what) clean += (c == '"' || c == '\\' || c == '\n') ? ' ' : c;
  return "{\"ok\": false, \"error\": \"" + clean + "\"}";
}

// Ends the process at once: UDT::cleanup() waits for lingering sockets, which a measurement that
// is over must not.
[[noreturn]] void finish(const std::string& out, const std::string& body, int code) {
  write_json(out, body);
  if (code != 0) fprintf(stderr, "%s\n", body.c_str());
  fflush(nullptr);
  _exit(code);
}

sockaddr_in addr_of(const std::string& host, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) {
    fprintf(stderr, "udt_peer: not an IPv4 address: %s\n", host.c_str());
    exit(2);
  }
  return a;
}

void set_common(UDTSOCKET s, const Args& a) {
  // UDT_MSS is the packet size on the wire including IP (20), UDP (8) and UDT (16) headers.
  int mss = int(a.num("mss-bytes", 1456)) + 44;
  UDT::setsockopt(s, 0, UDT_MSS, &mss, sizeof mss);
  int fc = int(a.num("flow-window", 25600));
  UDT::setsockopt(s, 0, UDT_FC, &fc, sizeof fc);
}

std::string f(double v) {
  char b[64];
  snprintf(b, sizeof b, "%.9g", v);
  return b;
}

int run_recv(const Args& a) {
  std::string out = a.get("out");
  int64_t t0 = a.num("t0-ns", 0), interval = a.num("interval-ns", 100000000),
          duration = a.num("duration-ns", 0);
  UDTSOCKET ls = UDT::socket(AF_INET, SOCK_STREAM, 0);
  set_common(ls, a);
  sockaddr_in me = addr_of(a.get("bind"), int(a.num("port", 0)));
  if (UDT::bind(ls, (sockaddr*)&me, sizeof me) == UDT::ERROR ||
      UDT::listen(ls, 1) == UDT::ERROR)
    finish(out, error_json(std::string("cannot listen: ") + UDT::getlasterror().getErrorMessage()), 1);
  printf("ready\n");
  fflush(stdout);

  std::atomic<int64_t> delivered{0};
  std::atomic<UDTSOCKET> conn{UDT::INVALID_SOCK};
  std::thread rx([&] {
    sockaddr_in peer;
    int len = sizeof peer;
    UDTSOCKET c = UDT::accept(ls, (sockaddr*)&peer, &len);
    if (c == UDT::INVALID_SOCK) return;
    conn = c;
    std::vector<char> buf(1 << 20);
    for (;;) {
      int n = UDT::recv(c, buf.data(), int(buf.size()), 0);
      if (n == UDT::ERROR || n <= 0) return;
      delivered += n;
    }
  });
  rx.detach();

  std::string samples;
  for (int64_t k = 1; k * interval <= duration; ++k) {
    if (!sleep_until(t0 + k * interval)) finish(out, error_json("stopped before the run's end"), 1);
    if (!samples.empty()) samples += ", ";
    samples += "{\"time_s\": " + f(k * interval / 1e9) + ", \"delivered_bytes\": " +
               std::to_string(delivered.load()) + "}";
  }
  int64_t at_end = delivered.load();
  std::string stats;
  UDT::TRACEINFO p;
  if (conn != UDT::INVALID_SOCK && UDT::perfmon(conn, &p, false) != UDT::ERROR)
    stats = ", \"drained\": {\"data_segs_in\": " + std::to_string(p.pktRecvTotal) +
            ", \"loss_reported\": " + std::to_string(p.pktRcvLossTotal) +
            ", \"acks_sent\": " + std::to_string(p.pktSentACKTotal) +
            ", \"naks_sent\": " + std::to_string(p.pktSentNAKTotal) + "}";
  finish(out, "{\"ok\": true, \"at_end_bytes\": " + std::to_string(at_end) + stats +
                  ", \"samples\": [" + samples + "]}", 0);
}

int run_send(const Args& a) {
  std::string out = a.get("out");
  int64_t t0 = a.num("t0-ns", 0), interval = a.num("interval-ns", 100000000),
          duration = a.num("duration-ns", 0), start = a.num("start-ns", 0),
          stop = a.num("stop-ns", duration), total = a.num("bytes", -1);
  int64_t payload = a.num("mss-bytes", 1456);
  UDTSOCKET s = UDT::socket(AF_INET, SOCK_STREAM, 0);
  set_common(s, a);
  sockaddr_in me = addr_of(a.get("bind"), 0);
  sockaddr_in peer = addr_of(a.get("peer"), int(a.num("port", 0)));
  if (UDT::bind(s, (sockaddr*)&me, sizeof me) == UDT::ERROR)
    finish(out, error_json(std::string("cannot bind: ") + UDT::getlasterror().getErrorMessage()), 1);
  // The handshake happens before t0 (as ccarena's stream sender's): the first byte leaves at the
  // flow's start.
  if (UDT::connect(s, (sockaddr*)&peer, sizeof peer) == UDT::ERROR)
    finish(out, error_json(std::string("cannot connect: ") + UDT::getlasterror().getErrorMessage()), 1);
  if (!sleep_until(t0 + start)) finish(out, error_json("stopped before the flow's start"), 1);

  double cpu0 = cpu_seconds();
  int64_t wall0 = now_ns();
  std::atomic<int64_t> written{0};
  std::atomic<bool> done_writing{false};
  const int64_t end_ns = t0 + std::min(stop, duration);
  std::thread tx([&] {
    std::vector<char> buf(64 * 1024, 'u');
    while (!g_stop && now_ns() < end_ns && (total < 0 || written < total)) {
      int64_t want = int64_t(buf.size());
      if (total >= 0) want = std::min(want, total - written.load());
      int n = UDT::send(s, buf.data(), int(want), 0);
      if (n == UDT::ERROR) break;
      written += n;
    }
    done_writing = true;
  });
  tx.detach();

  std::string samples;
  double min_rtt_ms = 0;
  double completion_s = -1;
  UDT::TRACEINFO p{};
  for (int64_t k = 1; k * interval <= duration; ++k) {
    int64_t due = t0 + k * interval;
    // A finite transfer polls every millisecond for its last byte acknowledged (its completion).
    while (total >= 0 && completion_s < 0 && done_writing && now_ns() < due && !g_stop) {
      int pending = 0, len = sizeof pending;
      UDT::getsockopt(s, 0, UDT_SNDDATA, &pending, &len);
      if (written >= total && pending == 0) {
        completion_s = (now_ns() - (t0 + start)) / 1e9;
        break;
      }
      sleep_until(std::min(due, now_ns() + 1000000));
    }
    if (!sleep_until(due)) finish(out, error_json("stopped before the run's end"), 1);
    if (UDT::perfmon(s, &p, false) == UDT::ERROR) break;
    if (p.msRTT > 0 && (min_rtt_ms == 0 || p.msRTT < min_rtt_ms)) min_rtt_ms = p.msRTT;
    if (!samples.empty()) samples += ", ";
    // Payload bits per second at UDT's packet sending period (as the simulator reports pacing).
    // In slow start UDT4 sends unpaced (a period of 1 µs): no pacing rate, as the simulator says.
    std::string pacing = p.usPktSndPeriod > 1 ? f(payload * 8 * 1e6 / p.usPktSndPeriod) : "null";
    samples += "{\"time_s\": " + f(k * interval / 1e9) +
               ", \"sent_bytes\": " + std::to_string(p.pktSentTotal * payload) +
               ", \"cwnd_bytes\": " + std::to_string(int64_t(p.pktCongestionWindow) * payload) +
               ", \"inflight_bytes\": " + std::to_string(int64_t(p.pktFlightSize) * payload) +
               ", \"srtt_s\": " + f(p.msRTT / 1e3) + ", \"pacing_rate_bps\": " + pacing +
               ", \"retransmits\": " + std::to_string(p.pktRetransTotal) +
               ", \"flow_window_packets\": " + std::to_string(p.pktFlowWindow) + "}";
  }
  int64_t wall_end = completion_s >= 0 ? int64_t(completion_s * 1e9) : (end_ns - wall0);
  std::string body = "{\"ok\": true, \"samples\": [" + samples + "]";
  body += ", \"offered_bytes\": " + std::to_string(written.load());
  body += ", \"at_end\": {\"bytes_sent\": " + std::to_string(p.pktSentTotal * payload) +
          ", \"bytes_retrans\": " + std::to_string(int64_t(p.pktRetransTotal) * payload) + "}";
  body += ", \"drained\": {\"data_segs_out\": " + std::to_string(p.pktSentTotal) +
          ", \"total_retrans\": " + std::to_string(p.pktRetransTotal) +
          ", \"loss_reported\": " + std::to_string(p.pktSndLossTotal) +
          ", \"naks_received\": " + std::to_string(p.pktRecvNAKTotal) +
          ", \"acks_received\": " + std::to_string(p.pktRecvACKTotal) +
          ", \"min_srtt_ms\": " + f(min_rtt_ms) + "}";
  if (completion_s >= 0) body += ", \"completion_time_s\": " + f(completion_s);
  body += ", \"cpu\": {\"cpu_s\": " + f(cpu_seconds() - cpu0) + ", \"wall_s\": " +
          f(wall_end / 1e9) + "}}";
  finish(out, body, 0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (strcmp(argv[1], "send") != 0 && strcmp(argv[1], "recv") != 0)) {
    fprintf(stderr, "usage: udt_peer send|recv --key value ...\n");
    return 2;
  }
  Args a;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strncmp(argv[i], "--", 2) != 0) {
      fprintf(stderr, "udt_peer: expected --key, got %s\n", argv[i]);
      return 2;
    }
    a.kv[argv[i] + 2] = argv[i + 1];
  }
  // Die with the parent that started us (ccarena), as its own generators do.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  int64_t parent = a.num("parent-pid", 0);
  if (parent > 0 && getppid() != parent) return 1;
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  signal(SIGPIPE, SIG_IGN);
  UDT::startup();
  return strcmp(argv[1], "send") == 0 ? run_send(a) : run_recv(a);
}
