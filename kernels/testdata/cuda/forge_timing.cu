// Forges the harness's CUDA-event timing: rewrites the rank binary's GOT
// entry of cudaEventElapsedTime (the threat model lets a candidate write any
// memory of its process) with one that reports 1 us, then does ~5 ms of GPU
// work per call. Expect CHEAT_DETECTED wallclock_crosscheck (the judge's
// clock sees the 5 ms).
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "wrap_allreduce_cuda.inc"

static cudaError_t fake_elapsed(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0.001f;
  return cudaSuccess;
}

static void patch_table(ElfW(Addr) base, const ElfW(Rela)* rel, size_t n, const ElfW(Sym)* sym, const char* str) {
  for (size_t i = 0; i < n; ++i) {
    const char* name = str + sym[ELF64_R_SYM(rel[i].r_info)].st_name;
    if (strcmp(name, "cudaEventElapsedTime") != 0) continue;
    void** slot = (void**)(base + rel[i].r_offset);
    const long page = sysconf(_SC_PAGESIZE);
    mprotect((void*)((uintptr_t)slot & ~(uintptr_t)(page - 1)), page, PROT_READ | PROT_WRITE);
    *slot = (void*)&fake_elapsed;
  }
}

static int patch_main_program(struct dl_phdr_info* info, size_t, void*) {
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') return 0;  // main program only
  for (int p = 0; p < info->dlpi_phnum; ++p) {
    if (info->dlpi_phdr[p].p_type != PT_DYNAMIC) continue;
    const ElfW(Dyn)* dyn = (const ElfW(Dyn)*)(info->dlpi_addr + info->dlpi_phdr[p].p_vaddr);
    // glibc relocates the main program's d_ptr values in place on x86-64;
    // accept both forms.
    auto fix = [&](ElfW(Addr) a) { return a < info->dlpi_addr ? a + info->dlpi_addr : a; };
    const ElfW(Rela)* jmprel = nullptr; size_t jmpsz = 0;
    const ElfW(Rela)* rela = nullptr; size_t relasz = 0;
    const ElfW(Sym)* sym = nullptr; const char* str = nullptr;
    for (; dyn->d_tag != DT_NULL; ++dyn) {
      if (dyn->d_tag == DT_JMPREL) jmprel = (const ElfW(Rela)*)fix(dyn->d_un.d_ptr);
      if (dyn->d_tag == DT_PLTRELSZ) jmpsz = dyn->d_un.d_val;
      if (dyn->d_tag == DT_RELA) rela = (const ElfW(Rela)*)fix(dyn->d_un.d_ptr);
      if (dyn->d_tag == DT_RELASZ) relasz = dyn->d_un.d_val;
      if (dyn->d_tag == DT_SYMTAB) sym = (const ElfW(Sym)*)fix(dyn->d_un.d_ptr);
      if (dyn->d_tag == DT_STRTAB) str = (const char*)fix(dyn->d_un.d_ptr);
    }
    if (sym == nullptr || str == nullptr) return 1;
    if (jmprel) patch_table(info->dlpi_addr, jmprel, jmpsz / sizeof(ElfW(Rela)), sym, str);
    if (rela) patch_table(info->dlpi_addr, rela, relasz / sizeof(ElfW(Rela)), sym, str);
    return 1;
  }
  return 0;
}

extern "C" int pkf_setup(pkf_context*) {
  dl_iterate_phdr(patch_main_program, nullptr);
  return 0;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t, void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  pkf_spin<<<1, 1, 0, s>>>(10000000LL);  // ~5 ms
  return pkf_run_correct_on(ctx, in, out, s);
}
