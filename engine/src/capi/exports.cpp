// libarmature's own translation unit: the library is armature_engine linked whole (engine/CMakeLists.txt), with
// engine/armature.map choosing what it exports.
