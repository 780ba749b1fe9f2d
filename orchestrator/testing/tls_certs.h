// A throw-away certificate authority and a server certificate for
// 127.0.0.1/localhost, made with the `openssl` command line in a test's
// temporary folder (tests of TLS between clients, the orchestrator and
// executors). Header-only so any module's test can use it.
//
// Threading: plain helper; call from the test's main thread.
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace pkforge::testing_tls {

struct TestCerts {
  std::string ca;           // CA certificate (PEM): what clients trust
  std::string server_cert;  // signed by ca, SAN DNS:localhost, IP:127.0.0.1
  std::string server_key;
  std::string other_ca;     // an unrelated CA (must not verify the server)
  std::string error;        // non-empty when generation failed (with openssl's output)
};

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Makes the files under `dir` (which must exist). `san`: the server
// certificate's subjectAltName.
inline TestCerts MakeTestCerts(const std::string& dir,
                               const std::string& san = "DNS:localhost,IP:127.0.0.1") {
  TestCerts c;
  c.ca = dir + "/ca.pem";
  c.server_cert = dir + "/server.pem";
  c.server_key = dir + "/server.key";
  c.other_ca = dir + "/other-ca.pem";
  std::ofstream(dir + "/san.ext") << "subjectAltName=" << san << "\n";
  const std::string log = dir + "/openssl.log";
  const std::string d = "'" + dir + "'";
  const std::string cmd =
      "cd " + d + " && (" +
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 "
      "-subj /CN=pkforge-test-ca && "
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.pem -days 2 "
      "-subj /CN=pkforge-other-ca && "
      "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr "
      "-subj /CN=localhost && "
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
      "-out server.pem -days 2 -extfile san.ext) > openssl.log 2>&1";
  if (std::system(cmd.c_str()) != 0) c.error = "openssl failed: " + ReadAll(log);
  return c;
}

}  // namespace pkforge::testing_tls
