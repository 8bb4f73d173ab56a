/*
 * The fixed WRAM contract at $C000-$C0FF. Python code (RAM profile, env, tests) reads these
 * exact addresses, so they are pinned with __at and must never move. C globals start at $C100
 * (--data-loc), the shadow OAM sits at $CE00 and the stack grows down from $E000.
 *
 * `static` keeps each translation unit's absolute symbol local: a shared global __at symbol
 * defined in several modules would be a duplicate definition for the linker.
 */
#ifndef TESTWORLD_WRAM_H
#define TESTWORLD_WRAM_H

#include <stdint.h>

static volatile __at(0xC000) uint8_t wGameState;
static volatile __at(0xC001) uint8_t wGroup;
static volatile __at(0xC002) uint8_t wRoom;
static volatile __at(0xC003) uint8_t wPlayerX;
static volatile __at(0xC004) uint8_t wPlayerY;
static volatile __at(0xC005) uint8_t wPlayerDir;
static volatile __at(0xC006) uint8_t wHealth;
static volatile __at(0xC007) uint8_t wMaxHealth;
static volatile __at(0xC008) uint8_t wRupees[2];
static volatile __at(0xC00A) uint8_t wKeys;
static volatile __at(0xC00B) uint8_t wSwordLevel;
static volatile __at(0xC00C) uint8_t wTextActive;
static volatile __at(0xC00D) uint8_t wMenuOpen;
static volatile __at(0xC00E) uint8_t wDeathCounter[2];
static volatile __at(0xC010) uint8_t wNumEnemies;
static volatile __at(0xC011) uint8_t wPuzzleFlags;
static volatile __at(0xC012) uint8_t wDoorFlags;
static volatile __at(0xC013) uint8_t wTreasureFlags;
static volatile __at(0xC014) uint8_t wKeysPressed;
static volatile __at(0xC015) uint8_t wSwordTimer;
static volatile __at(0xC016) uint8_t wInvincibleTimer;
static volatile __at(0xC017) uint8_t wFrameCounter;
static volatile __at(0xC018) uint8_t wEnemiesDefeated;
static volatile __at(0xC020) uint8_t wEnemySlots[8];
static volatile __at(0xC040) uint8_t wRoomFlags0[64];
static volatile __at(0xC080) uint8_t wRoomFlags1[16];

#define GAMESTATE_GAMEPLAY 2

#define GROUP_OVERWORLD 0
#define GROUP_INDOORS   1

#define DIR_UP    0
#define DIR_RIGHT 1
#define DIR_DOWN  2
#define DIR_LEFT  3

/* Oracle's joypad layout (wKeysPressed). */
#define KEY_A      0x01
#define KEY_B      0x02
#define KEY_SELECT 0x04
#define KEY_START  0x08
#define KEY_RIGHT  0x10
#define KEY_LEFT   0x20
#define KEY_UP     0x40
#define KEY_DOWN   0x80

#define MAX_ENEMIES     2
#define ENEMY_SLOT_SIZE 4
#define ENEMY_ACTIVE    0
#define ENEMY_X         1
#define ENEMY_Y         2

#define ROOMFLAG_VISITED 0x10
#define ROOMFLAG_ITEM    0x20

#define PUZZLE_SWITCH_PRESSED 0x01
#define PUZZLE_DOOR_OPEN      0x02
#define DOOR_UNLOCKED         0x01
#define TREASURE_KEY          0x01
#define TREASURE_SWORD        0x02

#endif
