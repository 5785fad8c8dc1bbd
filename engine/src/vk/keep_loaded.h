#pragma once
// LeakSanitizer checks at exit, after the Vulkan loader has unloaded the driver and the layers: their allocations
// would be reported from "<unknown module>", which no suppression can name. So sanitizer builds keep every library
// that is loaded when Armature meets an instance (its own, or a host's) loaded until exit (RTLD_NODELETE): CI's
// suppressions (.ci/lsan.supp) then name the drivers' own leaks, and ours still show. Elsewhere it does nothing.
namespace armature::vk {
void keepLibrariesLoaded();
}  // namespace armature::vk
