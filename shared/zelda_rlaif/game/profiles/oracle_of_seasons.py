"""The Legend of Zelda: Oracle of Seasons (US), from the public disassembly's symbol table.

Addresses: ../shared/spec/oracle-of-seasons-ram.md (read from a build of Drenn1/oracles-disasm that matched
the US ROM); treasure ids: the disassembly's ``constants/treasure.s``. The ROM is never bundled; users supply it
and a save state in gameplay.
"""

from __future__ import annotations

from zelda_rlaif.game.profiles.base import (
    Encoding,
    EnemySlot,
    GameProfile,
    Milestone,
    RamField,
    RomIdentity,
    WorldGeometry,
)

TREASURE_FLAGS = 0xC692  # wObtainedTreasureFlags: bit n of the bitset is treasure id n
GNARLED_KEY = 0x42  # TREASURE_GNARLED_KEY (Seasons)

ORACLE_OF_SEASONS = GameProfile(
    name="oracle-of-seasons",
    rom=RomIdentity(title="ZELDA DIN", cgb_flag=0xC0, header_checksum=0xEE,
                    description="The Legend of Zelda: Oracle of Seasons (US)"),
    ram={
        "game_state": RamField(0xC2EE, doc="wGameState: 2 in gameplay"),
        "group": RamField(0xCC49, doc="wActiveGroup: 0 overworld, 1 Subrosia, 2 Maku tree, 3 indoors, 4-5 dungeons"),
        "room": RamField(0xCC4C, doc="wActiveRoom"),
        "x": RamField(0xD00D, doc="w1Link.xh"),
        "y": RamField(0xD00B, doc="w1Link.yh"),
        "direction": RamField(0xD008, doc="w1Link.direction: 0 up, 1 right, 2 down, 3 left"),
        "health": RamField(0xC6A2, doc="wLinkHealth, quarter hearts"),
        "max_health": RamField(0xC6A3, doc="wLinkMaxHealth, quarter hearts"),
        "rupees": RamField(0xC6A5, Encoding.BCD16LE, 2, doc="wNumRupees"),
        "keys": RamField(0xC66E, Encoding.SUM, 12, doc="wDungeonSmallKeys: small keys summed over the 12 dungeons"),
        "sword_level": RamField(0xC6AC, doc="wSwordLevel"),
        "text_active": RamField(0xCBA0, Encoding.BOOL, doc="wTextIsActive"),
        "menu_open": RamField(0xCBCB, Encoding.BOOL, doc="wOpenedMenuType"),
        "deaths": RamField(0xC61E, Encoding.BCD16LE, 2, doc="wDeathCounter"),
        "enemies": RamField(0xCC30, doc="wNumEnemies"),
        # The original implementation never exported puzzle state, so its puzzle judge always saw 0. The
        # current room's flags (doors opened, switches, chests) are that state; VISITED/ITEM are left out.
        "puzzle_flags": RamField(0, Encoding.ROOM_FLAGS, mask=0xFF & ~0x30,
                                 doc="current room's flags in wPresentRoomFlags & co., without VISITED/ITEM"),
        "door_flags": RamField(0xC67A, doc="wDungeonBossKeys (low byte): one bit per dungeon's boss key"),
        "treasure_flags": RamField(0xC692, Encoding.POPCOUNT, 16, doc="wObtainedTreasureFlags, count of set bits"),
        "essences": RamField(0xC6BB, doc="wEssencesObtained bitset"),
        "season": RamField(0xCC4E, doc="wRoomStateModifier: 0 spring .. 3 winter"),
        "dungeon": RamField(0xCC55, doc="wDungeonIndex, $FF on the overworld"),
        "gnarled_key": RamField(TREASURE_FLAGS + GNARLED_KEY // 8, Encoding.BIT, mask=1 << GNARLED_KEY % 8,
                                doc="wObtainedTreasureFlags bit $42: the Gnarled Key was obtained"),
    },
    geometry=WorldGeometry(groups=8, grid_width={g: 16 for g in range(8)}, grid_height={g: 16 for g in range(8)},
                           total_rooms=8 * 256),
    enemy_slots=tuple(EnemySlot(active=0xD080 + i * 0x100, x=0xD08D + i * 0x100, y=0xD08B + i * 0x100)
                      for i in range(0, 0x10)),
    room_flags={0: 0xC700, 1: 0xC800, 2: 0xC800, 3: 0xC800, 4: 0xC900, 5: 0xCA00, 6: 0xC900, 7: 0xCA00},
    cgb=True,
    needs_user_state=True,
    # The quest's first steps: the sword (Hero's Cave), the Gnarled Key (from the Maku Tree) that opens the first
    # dungeon, a dungeon entered, its essence.
    milestones=(
        Milestone("take_sword", "took the sword", lambda s: s["sword_level"] >= 1),
        Milestone("take_gnarled_key", "obtained the Gnarled Key", lambda s: bool(s["gnarled_key"]),
                  reads=("gnarled_key",)),
        # Dungeon 0 is Hero's Cave, where the sword lies; 1-8 hold the essences.
        Milestone("enter_dungeon", "entered one of the eight essence dungeons", lambda s: 1 <= s["dungeon"] <= 8,
                  reads=("dungeon",)),
        Milestone("take_essence", "obtained a first essence", lambda s: s["essences"] != 0),
    ),
    notes="Some scenes were reported to deadlock with sound emulation off (a warp at the Maku Tree).",
    # No landmarks: NPCs move between scenes and are not mapped, so guidance relies on the other rules or an LLM.
)
