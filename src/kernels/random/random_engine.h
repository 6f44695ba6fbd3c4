#pragma once
// The counter-based generator behind the random operators (RandomUniform, RandomNormal, their
// *Like forms, Bernoulli, Multinomial and training-mode Dropout).
//
// Element i of an output is a pure function of (key, i): results do not depend on the number of
// threads, and a node with a `seed` attribute produces the same output on every run (the key is
// derived from the seed alone). Without `seed` every run draws a fresh key. The streams are our
// own (SplitMix64 finalisation of key + counter): they do not reproduce numpy's or ONNX Runtime's
// numbers for the same seed. Not for cryptographic use.
//
// Thread safety: the free functions are thread-safe; RandomKey::Fresh uses one atomic counter.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

#include "onnx_light/runtime/kernel_base.h"

namespace onnx_light::runtime {

inline uint64_t MixBits(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// 64 random bits for counter `i` of the stream `key`.
inline uint64_t RandomBits(uint64_t key, uint64_t i) { return MixBits(key + (i + 1) * 0x9E3779B97F4A7C15ull); }

/// A double uniform in [0, 1) with 53 random bits.
inline double UniformDouble(uint64_t key, uint64_t i) {
  return static_cast<double>(RandomBits(key, i) >> 11) * 0x1.0p-53;
}

/// Two independent standard normal values for pair `j` (Box-Muller on counters 2j and 2j+1).
inline std::pair<double, double> NormalPair(uint64_t key, uint64_t j) {
  const double u1 = 1.0 - UniformDouble(key, 2 * j);  // (0, 1]: the log stays finite
  const double u2 = UniformDouble(key, 2 * j + 1);
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double angle = 6.283185307179586476925 * u2;
  return {r * std::cos(angle), r * std::sin(angle)};
}

/// Keys of the random operators.
struct RandomKey {
  /// The key for a `seed` attribute value: the same seed always gives the same key.
  static uint64_t FromSeed(float seed) {
    uint32_t bits = 0;
    const float s = seed == 0.0f ? 0.0f : seed;  // -0 and +0 are the same seed
    std::memcpy(&bits, &s, sizeof(bits));
    return MixBits(0x6F6E6E782D6C6974ull ^ bits);
  }
  /// The key for an integer `seed` attribute (Dropout's).
  static uint64_t FromSeed(int64_t seed) { return MixBits(0x64726F706F75742Eull ^ static_cast<uint64_t>(seed)); }
  /// A new key per call: process entropy drawn once, then a counter.
  static uint64_t Fresh();
};

/// The key a node's run uses: fixed when the node has a seed, fresh per run otherwise.
class SeedRule {
 public:
  /// `integer_seed`: the operator's `seed` attribute is an int (Dropout) rather than a float.
  explicit SeedRule(const KernelBuildInfo& info, bool integer_seed = false) {
    if (!info.HasAttribute("seed")) return;
    seed_key_ = integer_seed ? RandomKey::FromSeed(info.GetInt("seed")) : RandomKey::FromSeed(info.GetFloat("seed"));
  }
  uint64_t NextKey() const { return seed_key_ ? *seed_key_ : RandomKey::Fresh(); }
  bool seeded() const { return seed_key_.has_value(); }

 private:
  std::optional<uint64_t> seed_key_;
};

}  // namespace onnx_light::runtime
