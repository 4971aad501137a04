// tests/sanitizers.h - whether this test binary is built with a sanitizer (gcc defines
// __SANITIZE_*__, clang answers __has_feature), for the few tests whose bounds depend on it.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define GENESIS_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GENESIS_TEST_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define GENESIS_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GENESIS_TEST_TSAN 1
#endif
#endif

#ifndef GENESIS_TEST_ASAN
#define GENESIS_TEST_ASAN 0
#endif
#ifndef GENESIS_TEST_TSAN
#define GENESIS_TEST_TSAN 0
#endif
