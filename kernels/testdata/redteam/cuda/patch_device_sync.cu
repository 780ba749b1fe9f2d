// ATTACK (forging times, cuda: interposing the harness's synchronization):
// the cuda rank ends a timed batch with cudaEventRecord(stop) +
// cudaDeviceSynchronize() (rank_cuda.cc Batch) and answers the judge's
// kOpSync linger probe with cudaDeviceSynchronize() too. In pkf_setup the
// candidate rewrites the rank executable's GOT entry for
// cudaDeviceSynchronize (found through the dynamic relocations of the main
// program, RELRO page made writable) with a function that returns
// cudaSuccess at once. The batch reply then leaves as soon as the calls are
// enqueued: the judge's clock stops (and the candidate is frozen: its CPU
// side only) while the GPU still works; the linger probe is blind too. Only
// the trusted side's own GPU work (snapshot after the batch, idle probe) can
// still see it.
// EXPECT: CHEAT_DETECTED timed_output_reverify / outlived_call /
// wallclock_crosscheck; never OK at the forged speedup.
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"

static cudaError_t fake_sync() { return cudaSuccess; }

static int patch_got(struct dl_phdr_info* info, size_t, void* data) {
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') return 0;  // main program only
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn)*)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (dyn == nullptr) return 0;
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Rela)* jmprel = nullptr;
  size_t pltrelsz = 0;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_SYMTAB) symtab = (const ElfW(Sym)*)d->d_un.d_ptr;
    if (d->d_tag == DT_STRTAB) strtab = (const char*)d->d_un.d_ptr;
    if (d->d_tag == DT_JMPREL) jmprel = (const ElfW(Rela)*)d->d_un.d_ptr;
    if (d->d_tag == DT_PLTRELSZ) pltrelsz = d->d_un.d_val;
  }
  if (symtab == nullptr || strtab == nullptr || jmprel == nullptr) return 0;
  for (size_t i = 0; i < pltrelsz / sizeof(ElfW(Rela)); ++i) {
    const ElfW(Sym)& s = symtab[ELF64_R_SYM(jmprel[i].r_info)];
    if (strcmp(strtab + s.st_name, "cudaDeviceSynchronize") != 0) continue;
    void** slot = (void**)(info->dlpi_addr + jmprel[i].r_offset);
    const uintptr_t page = (uintptr_t)slot & ~(uintptr_t)4095;
    mprotect((void*)page, 4096, PROT_READ | PROT_WRITE);
    *slot = (void*)&fake_sync;
    *(int*)data = 1;
  }
  return 0;
}

extern "C" int pkf_setup(pkf_context*) {
  int patched = 0;
  dl_iterate_phdr(patch_got, &patched);
  return 0;  // patched or not, carry on (the log is the verdict's business)
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  return pkf_run_correct_on(ctx, in, out, (cudaStream_t)stream);
}
