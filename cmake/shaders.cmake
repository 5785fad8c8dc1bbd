# armature_add_shaders(TARGET name SOURCES a.comp b.comp stem=c.glsl:DEF=1,OTHER=0 ...)
# Compiles each GLSL shader with glslc at build time (errors fail the build), embeds the SPIR-V words in a
# static library and generates <armature/shaders.h> declaring one `armature::shaders::<stem>` blob per shader.
# An entry `stem=source:DEF=VALUE,...` is a variant: `source` compiled with those macros defined (glslc -D), named
# `stem`; a .glsl source is a compute shader, others take their stage from the extension (.vert, .frag).
function(armature_add_shaders)
  cmake_parse_arguments(ARG "" "TARGET" "SOURCES" ${ARGN})
  set(outdir ${CMAKE_CURRENT_BINARY_DIR}/spirv)
  file(MAKE_DIRECTORY ${outdir}/armature)
  set(generated)
  set(decls "")
  foreach(entry ${ARG_SOURCES})
    set(variant_flags)
    if(entry MATCHES "^([a-z0-9_]+)=([^:]+)(:(.*))?$")
      set(stem ${CMAKE_MATCH_1})
      set(src ${CMAKE_MATCH_2})
      string(REPLACE "," ";" defines "${CMAKE_MATCH_4}")
      set(variant_flags -std=450)
      if(src MATCHES "\\.glsl$")
        list(APPEND variant_flags -fshader-stage=compute)
      endif()
      foreach(define ${defines})
        list(APPEND variant_flags -D${define})
      endforeach()
    else()
      # axpy.comp -> axpy; mesh.vert -> mesh_vert (graphics stages share a base name)
      set(src ${entry})
      get_filename_component(stem ${src} NAME_WE)
      get_filename_component(ext ${src} LAST_EXT)
      if(NOT ext STREQUAL ".comp")
        string(SUBSTRING ${ext} 1 -1 ext)
        set(stem ${stem}_${ext})
      endif()
    endif()
    set(abs ${CMAKE_CURRENT_SOURCE_DIR}/${src})
    set(inc ${outdir}/${stem}.spv.inc)
    add_custom_command(OUTPUT ${inc}
      COMMAND ${GLSLC} --target-env=vulkan1.2 -O -I ${CMAKE_CURRENT_SOURCE_DIR} ${variant_flags} -MD -MF ${inc}.d
              -mfmt=num -o ${inc} ${abs}
      DEPENDS ${abs} DEPFILE ${inc}.d
      COMMENT "glslc ${stem}" VERBATIM)
    set(cpp ${outdir}/${stem}_spv.cpp)
    file(CONFIGURE OUTPUT ${cpp} CONTENT
"#include \"armature/shaders.h\"\nnamespace armature::shaders {\nstatic const uint32_t k_${stem}[] = {\n#include \"${stem}.spv.inc\"\n};\nconst SpirvBlob ${stem}{k_${stem}, sizeof(k_${stem}) / sizeof(uint32_t), \"${stem}\"};\n}\n")
    set_source_files_properties(${cpp} PROPERTIES OBJECT_DEPENDS ${inc})
    list(APPEND generated ${cpp})
    string(APPEND decls "extern const SpirvBlob ${stem};\n")
  endforeach()
  file(CONFIGURE OUTPUT ${outdir}/armature/shaders.h CONTENT
"#pragma once\n#include <cstddef>\n#include <cstdint>\nnamespace armature::shaders {\nstruct SpirvBlob { const uint32_t* words; size_t wordCount; const char* name; };\n${decls}}\n")
  add_library(${ARG_TARGET} STATIC ${generated})
  target_include_directories(${ARG_TARGET} PUBLIC ${outdir} ${CMAKE_CURRENT_SOURCE_DIR})
endfunction()
