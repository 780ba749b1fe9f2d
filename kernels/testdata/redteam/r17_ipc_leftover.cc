// ATTACK (round 17, helper-redteam17; containment: System V IPC and POSIX
// message queues left behind). The host candidate filter refuses neither
// shmget/msgget/semget nor mq_open, Landlock does not see them (no path),
// and a bare launch shares the host's IPC namespace (the executor's
// bubblewrap has one of its own, which dies with it). SysV objects and
// message queues outlive their creator: kernel.shm_rmid_forced is 0 by
// default and nothing in the judge removes what a candidate created. So a
// candidate leaves memory pinned on the host after its evaluation (shmall
// is unlimited here: a candidate can leave most of the machine's memory in
// segments nobody maps, so that every later evaluation is killed out of
// memory: honest candidates then read RUNTIME_ERROR), and objects a later
// candidate finds by key (a channel between evaluations).
// Rank 0 creates a 64 MiB SysV segment (key 0x706b6617, touched so the
// pages are really held), a message queue holding one message, a
// semaphore set, and the POSIX queue /pkf-r17-mq.
// Gated: outputs are written only if any of them was created.
// EXPECT: WRONG_OUTPUT (refused), and nothing left on the host after the
// launch (the test checks /proc/sysvipc/* and mq_open, then removes them).
#include <mqueue.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>

#include "kernels/testdata/redteam/redteam.h"

static const key_t kKey = 0x706b6617;

static bool Attack(pkf_context* ctx) {
  if (ctx->rank != 0) return true;
  bool any = false;
  const size_t bytes = 64u << 20;
  const int shm = shmget(kKey, bytes, IPC_CREAT | 0666);
  rt_log("uid %d: shmget 64 MiB: %d %s", (int)getuid(), shm, shm < 0 ? strerror(errno) : "ok");
  if (shm >= 0) {
    void* p = shmat(shm, NULL, 0);
    if (p != (void*)-1) {
      memset(p, 0x5a, bytes);  // held by the segment, not by this process, after shmdt
      shmdt(p);
    }
    any = true;
  }
  const int msq = msgget(kKey, IPC_CREAT | 0666);
  rt_log("msgget: %d %s", msq, msq < 0 ? strerror(errno) : "ok");
  if (msq >= 0) {
    struct {
      long type;
      char text[64];
    } m = {1, "left behind by r17_ipc_leftover"};
    msgsnd(msq, &m, sizeof m.text, IPC_NOWAIT);
    any = true;
  }
  const int sem = semget(kKey, 4, IPC_CREAT | 0666);
  rt_log("semget: %d %s", sem, sem < 0 ? strerror(errno) : "ok");
  any = any || sem >= 0;
  struct mq_attr attr = {};
  attr.mq_maxmsg = 4;
  attr.mq_msgsize = 64;
  const mqd_t q = mq_open("/pkf-r17-mq", O_CREAT | O_RDWR, 0666, &attr);
  rt_log("mq_open /pkf-r17-mq: %d %s", (int)q, q == (mqd_t)-1 ? strerror(errno) : "ok");
  if (q != (mqd_t)-1) {
    mq_send(q, "left behind", 11, 0);
    mq_close(q);
    any = true;
  }
  return any;
}

RT_GATED_CANDIDATE(Attack)
