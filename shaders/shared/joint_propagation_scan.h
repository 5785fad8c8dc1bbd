// The segmented scan both joint shaders run (GLSL only; shared/joint_propagation_io.h describes it): the workgroup's scan in
// shared memory, the tiles' records, CARRY and the single pass's look-back. Before including it, define
// JOINTS_BACKWARD (0: states are (flag, product); 1: maps (flag, u, product)) and declare the scratch buffer's words
// as `scratchWords` (coherent: the look-back reads what other workgroups write during the dispatch).
#ifndef ARMATURE_JOINTS_SCAN_H
#define ARMATURE_JOINTS_SCAN_H

struct JointsState {
  uint flag;
  float u[12];
  float m[12];
};

const float kJointsIdentity[12] = float[12](1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0);
const float kJointsZero[12] = float[12](0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);

JointsState jointsIdentityState() {
  JointsState s;
  s.flag = 0u, s.u = kJointsZero, s.m = kJointsIdentity;
  return s;
}

// x then y.
JointsState jointsCombine(JointsState x, JointsState y) {
  JointsState r;
  r.flag = x.flag | y.flag;
#if JOINTS_BACKWARD
  jointsCombineBackward(x.u, x.m, y.flag, y.u, y.m, r.u, r.m);
#else
  r.u = kJointsZero;
  jointsCombineForward(x.m, y.flag, y.m, r.m);
#endif
  return r;
}

shared uint sScanFlag[JOINTS_THREADS];
#if JOINTS_BACKWARD
shared float sScanU[JOINTS_THREADS * 12];
#endif
shared float sScanM[JOINTS_THREADS * 12];
shared JointsState sTileCarry;
shared uint sTicket;

void jointsStoreShared(uint at, JointsState s) {
  sScanFlag[at] = s.flag;
  for (int k = 0; k < 12; ++k) {
#if JOINTS_BACKWARD
    sScanU[at * 12u + uint(k)] = s.u[k];
#endif
    sScanM[at * 12u + uint(k)] = s.m[k];
  }
}

JointsState jointsLoadShared(uint at) {
  JointsState s = jointsIdentityState();
  s.flag = sScanFlag[at];
  for (int k = 0; k < 12; ++k) {
#if JOINTS_BACKWARD
    s.u[k] = sScanU[at * 12u + uint(k)];
#endif
    s.m[k] = sScanM[at * 12u + uint(k)];
  }
  return s;
}

// The workgroup's inclusive scan of `mine` (Hillis–Steele); returns this invocation's exclusive prefix and sets
// `total` to the workgroup's.
JointsState jointsScanWorkgroup(JointsState mine, out JointsState total) {
  const uint t = gl_LocalInvocationID.x;
  barrier();  // the previous tile's reads are done
  jointsStoreShared(t, mine);
  barrier();
  for (uint offset = 1u; offset < JOINTS_THREADS; offset <<= 1u) {
    JointsState y = mine;
    if (t >= offset) y = jointsCombine(jointsLoadShared(t - offset), mine);
    barrier();
    if (t >= offset) {
      mine = y;
      jointsStoreShared(t, mine);
    }
    barrier();
  }
  total = jointsLoadShared(JOINTS_THREADS - 1u);
  return t > 0u ? jointsLoadShared(t - 1u) : jointsIdentityState();
}

// A tile's record: its aggregate (REDUCE, SINGLE), or its carry (CARRY).
JointsState jointsReadTile(uint tile) {
  const uint o = p.recordStart + tile * JOINTS_STATE_WORDS;
  JointsState s;
  s.flag = scratchWords[o] != 0u ? 1u : 0u;
  for (int k = 0; k < 12; ++k)
    s.u[k] = uintBitsToFloat(scratchWords[o + 1u + uint(k)]), s.m[k] = uintBitsToFloat(scratchWords[o + 13u + uint(k)]);
  return s;
}

void jointsWriteTile(uint tile, JointsState s) {
  const uint o = p.recordStart + tile * JOINTS_STATE_WORDS;
  scratchWords[o] = s.flag;
  for (int k = 0; k < 12; ++k)
    scratchWords[o + 1u + uint(k)] = floatBitsToUint(s.u[k]), scratchWords[o + 13u + uint(k)] = floatBitsToUint(s.m[k]);
}

// CARRY (one workgroup): the tiles' aggregates become each tile's exclusive prefix, in place.
void jointsCarry() {
  JointsState run = jointsIdentityState(), total;
  for (uint base = 0u; base < p.tiles; base += JOINTS_THREADS) {
    const uint tile = base + gl_LocalInvocationID.x;
    const JointsState ex =
        jointsScanWorkgroup(tile < p.tiles ? jointsReadTile(tile) : jointsIdentityState(), total);
    if (tile < p.tiles) jointsWriteTile(tile, jointsCombine(run, ex));
    run = jointsCombine(run, total);
  }
}

// SINGLE, by one invocation: publishes the tile's aggregate, then combines its predecessors' back to the first that
// starts a segment (waiting for each to be published): the tile's exclusive prefix. Never taking a predecessor's
// finished prefix keeps the products' association fixed: the same bits on every run.
JointsState jointsLookBack(uint tile, JointsState aggregate) {
  JointsState exclusive = jointsIdentityState();
  jointsWriteTile(tile, aggregate);
  memoryBarrierBuffer();
  atomicExchange(scratchWords[p.statusStart + tile], JOINTS_HAS_AGGREGATE);
  for (uint before = tile; before > 0u;) {
    --before;
    while (atomicAdd(scratchWords[p.statusStart + before], 0u) == 0u) {
    }
    memoryBarrierBuffer();
    const JointsState x = jointsReadTile(before);
    exclusive = jointsCombine(x, exclusive);
    if (x.flag != 0u) break;
  }
  return exclusive;
}

// The workgroup's first tile. SINGLE takes tiles in the order workgroups start (a ticket from the word after the
// scan's status words), whatever order the device starts them in: a tile's predecessors have all started, so its
// look-back waits only on workgroups that are running. (SINGLE runs one tile a workgroup.)
uint jointsFirstTile() {
  if (p.phase != JOINTS_SINGLE) return gl_WorkGroupID.x;
  if (gl_LocalInvocationID.x == 0u) sTicket = atomicAdd(scratchWords[p.statusStart + p.tiles], 1u);
  barrier();
  return sTicket;
}

// The tile's carry: the look-back's (SINGLE) or CARRY's, read by one invocation and shared.
JointsState jointsTileCarry(uint tile, JointsState aggregate) {
  if (gl_LocalInvocationID.x == 0u)
    sTileCarry = p.phase == JOINTS_SINGLE ? jointsLookBack(tile, aggregate) : jointsReadTile(tile);
  barrier();
  return sTileCarry;
}

#endif
