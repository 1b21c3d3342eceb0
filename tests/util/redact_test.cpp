// Secrets in command lines (util/redact.h): every expected value below is written by hand from
// the rule in the header: the value goes, the flag or variable name stays.
#include "util/redact.h"

#include <gtest/gtest.h>

using ts::redact_argv;
using ts::redact_command_line;
using V = std::vector<std::string>;

TEST(Redact, SecretFlagsSeparateAndJoinedValues) {
  EXPECT_EQ(redact_argv({"python", "train.py", "--hf_token", "hf_abc", "--lr", "3e-4"}),
            (V{"python", "train.py", "--hf_token", "***", "--lr", "3e-4"}));
  EXPECT_EQ(redact_argv({"--api-key=sk-123", "--password", "hunter2", "--token=t", "--client_secret", "s"}),
            (V{"--api-key=***", "--password", "***", "--token=***", "--client_secret", "***"}));
  EXPECT_EQ(redact_argv({"--WANDB_KEY", "k", "-passwd", "p"}), (V{"--WANDB_KEY", "***", "-passwd", "***"}));
}

TEST(Redact, ASecretFlagWithoutValueLeavesTheNextFlagAlone) {
  // "--token" last, or followed by another flag: there is no value to hide.
  EXPECT_EQ(redact_argv({"x.py", "--token", "--steps", "5"}), (V{"x.py", "--token", "--steps", "5"}));
  EXPECT_EQ(redact_argv({"x.py", "--token"}), (V{"x.py", "--token"}));
}

TEST(Redact, OrdinaryFlagsAndValuesStay) {
  V plain = {"torchrun", "--nproc_per_node=8", "train.py", "--batch-size", "64", "--output_dir", "/data/out",
             "--tokenizer_name", "gpt2"};
  EXPECT_EQ(redact_argv(plain), plain);
  // "token"/"key" count only as the flag's last word: these values are sizes and names.
  EXPECT_EQ(redact_argv({"--max_tokens", "512", "--key_dim", "64", "--keyboard"}),
            (V{"--max_tokens", "512", "--key_dim", "64", "--keyboard"}));
}

TEST(Redact, EnvironmentStyleAssignments) {
  EXPECT_EQ(redact_argv({"env", "WANDB_API_KEY=abc", "HF_TOKEN=x", "DB_PASSWORD=p", "AWS_SECRET_ACCESS_KEY=s",
                         "OMP_NUM_THREADS=4", "TOKENIZERS_PARALLELISM=false", "python", "t.py"}),
            (V{"env", "WANDB_API_KEY=***", "HF_TOKEN=***", "DB_PASSWORD=***", "AWS_SECRET_ACCESS_KEY=***",
               "OMP_NUM_THREADS=4", "TOKENIZERS_PARALLELISM=false", "python", "t.py"}));
  // Not a variable name before '=': a plain argument such as an expression stays.
  EXPECT_EQ(redact_argv({"a+b=c", "=x"}), (V{"a+b=c", "=x"}));
}

TEST(Redact, CredentialsInUrls) {
  EXPECT_EQ(redact_argv({"--db", "postgresql://alice:s3cret@db.example:5432/runs"}),
            (V{"--db", "postgresql://alice:***@db.example:5432/runs"}));
  EXPECT_EQ(redact_argv({"git+https://ghp_abc@github.com/org/repo.git"}),
            (V{"git+https://***@github.com/org/repo.git"}));
  EXPECT_EQ(redact_argv({"--data=s3://bucket/path?X-Amz-Signature=1&token=abc&part=2"}),
            (V{"--data=s3://bucket/path?X-Amz-Signature=***&token=***&part=2"}));
  // No userinfo, no secret parameter: untouched (an '@' after the host is part of the path).
  EXPECT_EQ(redact_argv({"https://example.com/a@b?page=2"}), (V{"https://example.com/a@b?page=2"}));
}

TEST(Redact, JoinedCommandLines) {
  EXPECT_EQ(redact_command_line("python t.py --api_key K1 MY_TOKEN=K2 --url=http://u:K3@h/"),
            "python t.py --api_key *** MY_TOKEN=*** --url=http://u:***@h/");
  EXPECT_EQ(redact_command_line(""), "");
}
