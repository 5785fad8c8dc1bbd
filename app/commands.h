#pragma once
// Subcommands of the `armature` command-line tool.
namespace armature::app {
int runInfo();
}  // namespace armature::app
