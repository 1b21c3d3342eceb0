// The small name/argument parsers the analyses rely on.
#include <gtest/gtest.h>

#include "analysis/passes.h"

namespace ts::analysis {
namespace {

TEST(CopyNames, DirectionAndMemoryKind) {
  using R = std::pair<std::string, std::string>;
  EXPECT_EQ(parse_copy_name("Memcpy HtoD (Pageable -> Device)"), R("HtoD", "pageable"));
  EXPECT_EQ(parse_copy_name("Memcpy HtoD (Pinned -> Device)"), R("HtoD", "pinned"));
  EXPECT_EQ(parse_copy_name("Memcpy DtoH (Device -> Pageable)"), R("DtoH", "pageable"));
  EXPECT_EQ(parse_copy_name("Memcpy DtoH (Device -> Pinned)"), R("DtoH", "pinned"));
  EXPECT_EQ(parse_copy_name("Memcpy DtoD (Device -> Device)"), R("DtoD", "device"));
  EXPECT_EQ(parse_copy_name("Memcpy PtoP (Device -> Device)"), R("PtoP", "device"));
  EXPECT_EQ(parse_copy_name("Memcpy HtoD (Host -> Device)"), R("HtoD", "host"));  // AMD
  EXPECT_EQ(parse_copy_name("Memset (Device)"), R("Memset", "device"));
  EXPECT_EQ(parse_copy_name("something else"), R("other", "unknown"));
}

TEST(InputDims, ShapesPerArgument) {
  auto d = parse_input_dims("[[64, 2048], [2048, 1000], [], 1]");
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0], (std::vector<int64_t>{64, 2048}));
  EXPECT_EQ(d[1], (std::vector<int64_t>{2048, 1000}));
  EXPECT_TRUE(d[2].empty());
  EXPECT_TRUE(d[3].empty());
  auto nested = parse_input_dims("[[[1, 2], [3]], [4, 5]]");  // a TensorList, then a tensor
  ASSERT_EQ(nested.size(), 2u);
  EXPECT_TRUE(nested[0].empty());
  EXPECT_EQ(nested[1], (std::vector<int64_t>{4, 5}));
  EXPECT_TRUE(parse_input_dims("").empty());
}

}  // namespace
}  // namespace ts::analysis
