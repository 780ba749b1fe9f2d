// ATTACK (reading operator secrets): the judge passes its environment to the
// rank processes minus names containing KEY, TOKEN, SECRET or PASSWORD (a
// denylist; judge.cc Spawn), and NV_* names pass whatever they contain.
// Secrets commonly live under other names: *_PASSWD, *_AUTH, *_CREDENTIALS,
// a DSN/URL with a password in it, NV_*_API_KEY. The test plants such
// variables in the judge's environment (values "redteam-planted-..."); the
// candidate reads its own environment. Gated: outputs only if one arrived.
// EXPECT: WRONG_OUTPUT (no operator secret reaches a candidate process).
#include "kernels/testdata/redteam/redteam.h"
extern char** environ;
static bool attack(pkf_context*) {
  bool found = false;
  for (char** e = environ; *e != NULL; ++e)
    if (strstr(*e, "redteam-planted-") != NULL) {
      const char* eq = strchr(*e, '=');
      rt_log("secret in the rank's environment: %.*s", eq ? (int)(eq - *e) : 20, *e);
      found = true;
    }
  return found;
}
RT_GATED_CANDIDATE(attack)
