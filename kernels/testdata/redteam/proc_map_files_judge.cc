// ATTACK (trusted processes): open the judge's and the reference ranks'
// mappings through /proc/<pid>/map_files/* (the judge maps both sides'
// control blocks; reference ranks map pkf-ref-data).
// EXPECT: WRONG_OUTPUT (gated: outputs only if a mapping opened).
#include "kernels/testdata/redteam/redteam.h"
static bool attack(pkf_context*) {
  std::vector<int> targets = rt_refs();
  targets.push_back(getppid());
  int opened = 0;
  for (int pid : targets) {
    const std::string dir = "/proc/" + std::to_string(pid) + "/map_files";
    DIR* d = opendir(dir.c_str());
    if (d == NULL) continue;
    while (struct dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      int fd = open((dir + "/" + e->d_name).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        ++opened;
        close(fd);
      }
    }
    closedir(d);
  }
  rt_log("opened %d mappings of trusted processes", opened);
  return opened > 0;
}
RT_GATED_CANDIDATE(attack)
