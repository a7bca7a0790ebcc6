/* bcryptprimitives.dll's ProcessPrng, which every Rust std binary imports (its random
 * source) and Wine 8.0 lacks: the same bytes from RtlGenRandom (advapi32's
 * SystemFunction036). Built by scripts/cross into the Wine prefix's system32; only for
 * running the tests under Wine, never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
