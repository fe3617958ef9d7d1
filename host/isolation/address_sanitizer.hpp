#pragma once

// Whether this build runs under AddressSanitizer, whose reserved shadow is
// beyond any address-space bound: a family's memory_mb is then the
// sanitizer's resident-size watch instead of RLIMIT_AS (docs/security.md).
#if defined(__SANITIZE_ADDRESS__)
#define GATEHOUSE_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GATEHOUSE_UNDER_ASAN 1
#endif
#endif
