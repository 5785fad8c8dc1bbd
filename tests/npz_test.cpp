// Archives as users have them and as attackers craft them: entries the loader must list but never parse (object
// arrays, strings), and archives that must be refused, within a memory bound, before they cost memory: size claims,
// deflate bombs, a corrupt CRC, too much in total. The bound is checked in a forked child, whose peak RSS
// (getrusage) starts from this small process's.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include "armature/body/body_model.h"
#include "armature/error.h"
#include "support/archive_checks.h"
#include "support/body_fixtures.h"
#include "support/temp_path.h"

using namespace armature;
using namespace armature::test;

// Official SMPL-X v1.1 archives carry joint2num and part2num as pickled object arrays and an allow_pickle entry;
// SMPL+H ones carry strings (bs_style, bs_type). They are listed with their dtype and never parsed, and the model
// poses as the same data without them.
TEST(Npz, ObjectAndStringEntriesAreListedNotParsed) {
  const BodyModel m = smallModel();
  auto entries = modelEntries(m);
  const std::vector<uint8_t> pickleBytes = {0x80, 0x02, 0x7d, 0x71, 0x00, 0x58, 0x05, 0x00, 0x00, 0x00,
                                            'p',  'e',  'l',  'v',  'i',  0x4b, 0x00, 0x73, 0x2e};  // {'pelvi': 0}
  entries["joint2num"] = rawNpy("|O", "()", pickleBytes);
  entries["part2num"] = rawNpy("|O", "()", pickleBytes);
  entries["allow_pickle"] = rawNpy("|O", "()", {0x80, 0x02, 0x88, 0x2e});  // True
  entries["bs_style"] = rawNpy("<U3", "()", std::vector<uint8_t>(12, 0));
  entries["bs_type"] = rawNpy("|S7", "()", std::vector<uint8_t>(7, 'l'));
  for (bool deflate : {false, true}) {
    const std::string path = tempPath(deflate ? "official_deflated.npz" : "official.npz");
    writeNpzEntries(path, entries, deflate);
    NpzReader reader = openArrayFile(path);
    const NpzEntry* joint2num = reader.find("joint2num");
    ASSERT_NE(joint2num, nullptr);
    EXPECT_EQ(joint2num->dtype, "|O");
    EXPECT_FALSE(joint2num->readable);
    ASSERT_NE(reader.find("bs_style"), nullptr);
    EXPECT_EQ(reader.find("bs_style")->dtype, "<U3");
    ASSERT_NE(reader.find("v_template"), nullptr);
    EXPECT_TRUE(reader.find("v_template")->readable);
    EXPECT_EQ(reader.find("v_template")->shape, (std::vector<size_t>{60, 3}));
    const BodyModel loaded = bodyModelFromNpz(reader);
    EXPECT_EQ(loaded.vTemplate, bodyModelFromNpz(readNpz(path), "plain").vTemplate);
    const BodyModel plain = bodyModelFromNpz(
        [&] {
          NpzArchive a;
          for (const auto& [key, array] : bodyModelToNpz(m)) {
            auto bytes = encodeNpy(array);
            a[key] = parseNpy(bytes.data(), bytes.size(), key);
          }
          return a;
        }(),
        "plain");
    BodyParams p = BodyParams::zeros(plain, 1, plain.shapeCount, plain.exprCount);
    std::mt19937_64 rng(9);
    std::uniform_real_distribution<double> u(-0.4, 0.4);
    for (double& x : p.pose) x = u(rng);
    for (double& x : p.betas) x = u(rng);
    EXPECT_EQ(bodyForwardRef(loaded, p).vertices, bodyForwardRef(plain, p).vertices);
    EXPECT_THROW(reader.read("joint2num"), Error);  // asked for explicitly: a clear error, not a parse
    std::filesystem::remove(path);
  }
}

// A flipped byte in a stored entry's data is caught by its CRC-32 (libzip reads stored data without checking it).
TEST(Npz, CorruptDataFailsItsCrc) {
  const std::string path = tempPath("crc.npz");
  writeNpzEntries(path, modelEntries(smallModel()), false);
  std::vector<char> bytes = readFile(path);
  const std::string text(bytes.begin(), bytes.end());
  const size_t entry = text.find("v_template.npy");
  const size_t data = text.find("\x93NUMPY", entry);
  ASSERT_NE(data, std::string::npos);
  bytes[data + 200] = char(bytes[data + 200] ^ 0x5a);  // inside the data, past the 128-byte header
  writeFile(path, bytes);
  EXPECT_EQ(loadExpectingError(path, {"crc.npz", "'v_template'", "CRC-32"}, {}), 0);
  std::filesystem::remove(path);
}

// Files of about 1 KB whose zip directory (and .npy header, so the two agree) say an entry inflates to 3.75 GiB or
// 1.75 GiB: refused from the claim, by the ratio deflate cannot exceed, before any allocation.
TEST(Npz, SizeClaimsAreRefusedBeforeAllocating) {
  struct Claim {
    uint32_t bytes;
    const char* shape;  // (bytes − 128) / 4 floats: the header's 128 bytes and the data make the claim
    const char* refusal;
  };
  for (const Claim& c : {Claim{0xF0000000u, "(1006632928,)", "3840.0 MiB from 80 compressed bytes"},
                         Claim{0x70000000u, "(469762016,)", "deflate can reach"}}) {
    SCOPED_TRACE(c.shape);
    const std::string path = tempPath("claim.npz");
    const std::vector<uint8_t> small = rawNpy("<f4", c.shape, std::vector<uint8_t>(16, 0));
    ASSERT_EQ(small.size(), 128u + 16u);
    writeNpzEntries(path, {{"v_template", small}}, true);
    std::vector<char> bytes = readFile(path);
    // The uncompressed size in the local header (offset 22) and in the central directory's (offset 24).
    for (size_t i = 0; i + 28 < bytes.size(); ++i) {
      if (std::memcmp(&bytes[i], "PK\x03\x04", 4) == 0) std::memcpy(&bytes[i + 22], &c.bytes, 4);
      if (std::memcmp(&bytes[i], "PK\x01\x02", 4) == 0) std::memcpy(&bytes[i + 24], &c.bytes, 4);
    }
    writeFile(path, bytes);
    EXPECT_LT(bytes.size(), 2000u);
    const auto [status, peakMiB] = inChild([&] {
      return loadExpectingError(path, {"claim.npz", "'v_template'", c.refusal}, {});
    });
    EXPECT_EQ(status, 0) << "0: refused with a message naming the file, the entry and the limit";
    EXPECT_LT(peakMiB, kMemoryBoundMiB);
    std::filesystem::remove(path);
  }
}

// A deflate bomb: 64 MiB of zeros in a ~64 KB entry. Unused by the model, it is never decoded (the model loads
// within the memory bound); read, it is refused by the per-entry limit, or by the total when two entries together
// exceed it.
TEST(Npz, DeflateBombsAreRefusedOrNeverDecoded) {
  const std::string path = tempPath("bomb.npz");
  auto entries = modelEntries(smallModel());
  entries["unused"] = rawNpy("<f4", "(16777216,)", std::vector<uint8_t>(size_t(64) << 20, 0));
  writeNpzEntries(path, entries, true);
  entries.clear();
  EXPECT_LT(std::filesystem::file_size(path), size_t(1) << 20);
  const double basePeak = inChild([] { return 0; }).second;
  const auto [loaded, loadPeak] = inChild([&] {
    NpzReader reader = openArrayFile(path);
    return bodyModelFromNpz(reader).vertexCount == 60 ? 0 : 1;
  });
  EXPECT_EQ(loaded, 0);
  // Decoding the entry would touch 64 MiB for its bytes and 128 MiB for its values.
  EXPECT_LT(loadPeak, basePeak + 48) << "the unused entry was decoded";
  NpzLimits perEntry;
  perEntry.maxEntryBytes = uint64_t(16) << 20;
  EXPECT_EQ(loadExpectingError(path, {"bomb.npz", "'unused'", "over the limit of 16.0 MiB an entry"}, perEntry), 0);
  NpzLimits total;
  total.maxTotalBytes = uint64_t(32) << 20;
  EXPECT_EQ(
      loadExpectingError(path, {"bomb.npz", "'unused'", "over the limit of 32.0 MiB (ARMATURE_READ_BUDGET_MIB"}, total),
      0);
  NpzLimits ratio;
  ratio.maxDeflateRatio = 100;
  EXPECT_EQ(loadExpectingError(path, {"bomb.npz", "'unused'", "100:1"}, ratio), 0);
  std::filesystem::remove(path);
}

// An entry whose .npy header's shape disagrees with the size the zip directory records is refused before reading.
TEST(Npz, HeaderAndDirectoryMustAgree) {
  const std::string path = tempPath("disagree.npz");
  auto entries = modelEntries(smallModel());
  std::vector<uint8_t> lying = rawNpy("<f4", "(1000000, 3)", std::vector<uint8_t>(60 * 12, 0));
  entries["v_template"] = lying;
  writeNpzEntries(path, entries, false);
  EXPECT_EQ(loadExpectingError(path, {"disagree.npz", "'v_template'", "(1000000, 3)", "claims"}, {}), 0);
  std::filesystem::remove(path);
}
