/*
 * All graphics of the test world, drawn as ASCII art so they can be edited in place without a
 * converter: '.' colour 0 (transparent for sprites), '+' colour 1, 'o' colour 2, '#' colour 3.
 * gfx_load() turns them into 2bpp tiles once at boot, while the LCD is off.
 */
#include <stdint.h>

#include "gfx.h"
#include "hw.h"

#define ROWS16(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p) a b c d e f g h i j k l m n o p

static const char art_grass[] = ROWS16(
    "................",
    "..+.............",
    ".+.+........+...",
    "...........+.+..",
    "................",
    "......+.........",
    ".....+.+........",
    "................",
    "................",
    ".+..........+...",
    "+.+........+.+..",
    "................",
    "........+.......",
    ".......+.+......",
    "................",
    "................");

static const char art_tree[] = ROWS16(
    "....oooooooo....",
    "..oo++++++++oo..",
    ".o++++oo++++++o.",
    ".o+++o++o++++oo.",
    "o++++++++++oo++o",
    "o+oo+++++++++++o",
    "o++++++oo++++++o",
    "o+++++o++o++oo+o",
    ".o++++++++++++o.",
    ".oo++++++++++oo.",
    "..oooooooooooo..",
    "....oo#oo#oo....",
    "......#oo#......",
    "......#oo#......",
    ".....##oo##.....",
    "......####......");

static const char art_rock[] = ROWS16(
    "................",
    ".....oooooo.....",
    "...oo++++++oo...",
    "..o+..+++++++o..",
    ".o+.++++++++++o.",
    ".o++++++++++++o.",
    "o+++++++++++o++o",
    "o++++++++++o+++o",
    "o+++++++++++++oo",
    "o++o+++++++++++o",
    ".o++o++++++++oo.",
    ".o+++++++++++oo.",
    "..oo+++++++ooo..",
    "...#ooooooooo#..",
    "....##########..",
    "................");

static const char art_water[] = ROWS16(
    "++++++++++++++++",
    "+++oo+++++++++++",
    "++o++o++++++++++",
    "+++++++++++oo+++",
    "++++++++++o++o++",
    "++++++++++++++++",
    "++++++oo++++++++",
    "+++++o++o+++++++",
    "++++++++++++++++",
    "+oo+++++++++oo++",
    "o++o+++++++o++o+",
    "++++++++++++++++",
    "++++++++oo++++++",
    "+++++++o++o+++++",
    "++++++++++++++++",
    "++++++++++++++++");

static const char art_roof[] = ROWS16(
    "oooooooooooooooo",
    "o+o+o+o+o+o+o+o+",
    "oooooooooooooooo",
    "+o+o+o+o+o+o+o+o",
    "oooooooooooooooo",
    "o+o+o+o+o+o+o+o+",
    "oooooooooooooooo",
    "+o+o+o+o+o+o+o+o",
    "oooooooooooooooo",
    "o+o+o+o+o+o+o+o+",
    "oooooooooooooooo",
    "+o+o+o+o+o+o+o+o",
    "oooooooooooooooo",
    "o+o+o+o+o+o+o+o+",
    "oooooooooooooooo",
    "+o+o+o+o+o+o+o+o");

static const char art_house_wall[] = ROWS16(
    "################",
    "+++#+++++++#++++",
    "+++#+++++++#++++",
    "+++#+++++++#++++",
    "################",
    "#+++++++#+++++++",
    "#+++++++#+++++++",
    "#+++++++#+++++++",
    "################",
    "+++#+++++++#++++",
    "+++#+++++++#++++",
    "+++#+++++++#++++",
    "################",
    "#+++++++#+++++++",
    "#+++++++#+++++++",
    "#+++++++#+++++++");

static const char art_door[] = ROWS16(
    "oooooooooooooooo",
    "################",
    "################",
    "################",
    "################",
    "################",
    "################",
    "################",
    "################",
    "################",
    "################",
    "################",
    "################",
    "################",
    "################",
    "################");

static const char art_stairs[] = ROWS16(
    "################",
    "#oooooooooooooo#",
    "#++++++++++++++#",
    "################",
    "#oooooooooooooo#",
    "#++++++++++++++#",
    "################",
    "#oooooooooooooo#",
    "#++++++++++++++#",
    "################",
    "#oooooooooooooo#",
    "#++++++++++++++#",
    "################",
    "#oooooooooooooo#",
    "#++++++++++++++#",
    "################");

static const char art_floor[] = ROWS16(
    "++++++++++++++++",
    "+.......+.......",
    "+.......+.......",
    "+.......+.......",
    "+.......+.......",
    "+.......+.......",
    "+.......+.......",
    "+.......+.......",
    "++++++++++++++++",
    "+.......+.......",
    "+.......+.......",
    "+.......+.......",
    "+.......+.......",
    "+.......+.......",
    "+.......+.......",
    "+.......+.......");

static const char art_wall[] = ROWS16(
    "################",
    "#oooooo##oooooo#",
    "#o++++o##o++++o#",
    "#o++++o##o++++o#",
    "#o++++o##o++++o#",
    "#o++++o##o++++o#",
    "#oooooo##oooooo#",
    "################",
    "################",
    "#oooooo##oooooo#",
    "#o++++o##o++++o#",
    "#o++++o##o++++o#",
    "#o++++o##o++++o#",
    "#o++++o##o++++o#",
    "#oooooo##oooooo#",
    "################");

static const char art_mat[] = ROWS16(
    "................",
    ".oooooooooooooo.",
    ".o++++++++++++o.",
    ".o+o+o+o+o+o++o.",
    ".o++++++++++++o.",
    ".o++o+o+o+o+o+o.",
    ".o++++++++++++o.",
    ".o+o+o+o+o+o++o.",
    ".o++++++++++++o.",
    ".o++o+o+o+o+o+o.",
    ".o++++++++++++o.",
    ".o+o+o+o+o+o++o.",
    ".o++++++++++++o.",
    ".o++++++++++++o.",
    ".oooooooooooooo.",
    "................");

static const char art_locked[] = ROWS16(
    "################",
    "#oooooooooooooo#",
    "#o++++++++++++o#",
    "#o++++####++++o#",
    "#o+++##++##+++o#",
    "#o+++#++++#+++o#",
    "#o+++##++##+++o#",
    "#o++++####++++o#",
    "#o+++++##+++++o#",
    "#o+++++##+++++o#",
    "#o++++###+++++o#",
    "#o+++++##+++++o#",
    "#o++++###+++++o#",
    "#o++++++++++++o#",
    "#oooooooooooooo#",
    "################");

static const char art_bars[] = ROWS16(
    "################",
    "+#o+#o+#o+#o+#o+",
    "+#o+#o+#o+#o+#o+",
    "+#o+#o+#o+#o+#o+",
    "+#o+#o+#o+#o+#o+",
    "+#o+#o+#o+#o+#o+",
    "+#o+#o+#o+#o+#o+",
    "################",
    "+#o+#o+#o+#o+#o+",
    "+#o+#o+#o+#o+#o+",
    "+#o+#o+#o+#o+#o+",
    "+#o+#o+#o+#o+#o+",
    "+#o+#o+#o+#o+#o+",
    "+#o+#o+#o+#o+#o+",
    "+#o+#o+#o+#o+#o+",
    "################");

static const char art_switch_off[] = ROWS16(
    "................",
    "................",
    "...oooooooooo...",
    "..o++++++++++o..",
    ".o++########++o.",
    ".o+#oooooooo#+o.",
    ".o+#o++++++o#+o.",
    ".o+#o++++++o#+o.",
    ".o+#o++++++o#+o.",
    ".o+#o++++++o#+o.",
    ".o+#oooooooo#+o.",
    ".o++########++o.",
    "..o++++++++++o..",
    "...oooooooooo...",
    "................",
    "................");

static const char art_switch_on[] = ROWS16(
    "................",
    "................",
    "...oooooooooo...",
    "..o++++++++++o..",
    ".o++++++++++++o.",
    ".o++########++o.",
    ".o++########++o.",
    ".o++########++o.",
    ".o++########++o.",
    ".o++########++o.",
    ".o++########++o.",
    ".o++++++++++++o.",
    "..o++++++++++o..",
    "...oooooooooo...",
    "................",
    "................");

static const char art_rupee[] = ROWS16(
    "................",
    "......####......",
    ".....#o++o#.....",
    "....#o+..+o#....",
    "....#o+.++o#....",
    "....#o+.++o#....",
    "....#o+.++o#....",
    "....#o+.++o#....",
    "....#o+.++o#....",
    "....#o+.++o#....",
    "....#o++++o#....",
    "....#oo++oo#....",
    ".....#oooo#.....",
    "......####......",
    "................",
    "................");

static const char art_big_rupee[] = ROWS16(
    ".......##.......",
    "......#oo#......",
    ".....#o++o#.....",
    "....#o+..+o#....",
    "...#o+.++++o#...",
    "...#o+.++++o#...",
    "...#o+.++++o#...",
    "...#o+.++++o#...",
    "...#o+.++++o#...",
    "...#o+.++++o#...",
    "...#o+.++++o#...",
    "...#o++++++o#...",
    "....#o++++o#....",
    ".....#o++o#.....",
    "......#oo#......",
    ".......##.......");

static const char art_key[] = ROWS16(
    "................",
    "................",
    "....####........",
    "...#oooo#.......",
    "..#o#..#o#......",
    "..#o#..#o#......",
    "..#o#..#o#......",
    "...#oooo#.......",
    "....#oo#........",
    "....#oo#........",
    "....#oo####.....",
    "....#oooooo#....",
    "....#oo####.....",
    "....#oo###......",
    "....#ooooo#.....",
    ".....######.....");

static const char art_sword_item[] = ROWS16(
    ".......##.......",
    "......#++#......",
    "......#++#......",
    "......#++#......",
    "......#++#......",
    "......#++#......",
    "......#++#......",
    "......#++#......",
    "......#++#......",
    "...##########...",
    "...#oooooooo#...",
    "...##########...",
    "......#oo#......",
    "......#oo#......",
    "......#oo#......",
    ".......##.......");

static const char art_npc[] = ROWS16(
    ".....######.....",
    "....#++++++#....",
    "...#+#++++#+#...",
    "...#++++++++#...",
    "...#+o++++o+#...",
    "...#++oooo++#...",
    "....#+oooo+#....",
    "...##oooooo##...",
    "..#oo#oooo#oo#..",
    "..#oo#oooo#oo#..",
    "..#++#oooo#++#..",
    "...##oooooo##...",
    "....#oooooo#....",
    "....#oo##oo#....",
    "....#oo##oo#....",
    "....###..###....");

static const char art_hero_down[] = ROWS16(
    ".....######.....",
    "....#oooooo#....",
    "...#oooooooo#...",
    "...#o######o#...",
    "...##++++++##...",
    "...#+#++++#+#...",
    "...#++++++++#...",
    "....#++##++#....",
    "...##oooooo##...",
    "..#++#oooo#++#..",
    "..#++#oooo#++#..",
    "...##oooooo##...",
    "....#oooooo#....",
    "....#oo##oo#....",
    "....#++##++#....",
    "....###..###....");

static const char art_hero_up[] = ROWS16(
    ".....######.....",
    "....#oooooo#....",
    "...#oooooooo#...",
    "...#oooooooo#...",
    "...#oooooooo#...",
    "...##oooooo##...",
    "...#+#oooo#+#...",
    "....#++++++#....",
    "...##oooooo##...",
    "..#++#oooo#++#..",
    "..#++#oooo#++#..",
    "...##oooooo##...",
    "....#oooooo#....",
    "....#oo##oo#....",
    "....#oo##oo#....",
    "....###..###....");

static const char art_hero_right[] = ROWS16(
    ".....######.....",
    "....#oooooo#....",
    "...#oooooooo#...",
    "..#oooo######...",
    "..#ooo#++++#....",
    "..#oo#+++#+#....",
    "...##+++++++#...",
    "....#+++++##....",
    "....##oooo#.....",
    "...#oooo++#.....",
    "...#oooo++#.....",
    "...#oooooo#.....",
    "....#ooooo#.....",
    "....#oo#oo#.....",
    "....#++#++#.....",
    "....###.###.....");

static const char art_sword_up[] = ROWS16(
    ".......##.......",
    "......#++#......",
    "......#++#......",
    "......#++#......",
    "......#++#......",
    "......#++#......",
    "......#++#......",
    "......#++#......",
    "......#++#......",
    "....########....",
    "....#oooooo#....",
    "....########....",
    "......#oo#......",
    "......#oo#......",
    "......#oo#......",
    ".......##.......");

static const char art_sword_right[] = ROWS16(
    "................",
    "................",
    "................",
    "................",
    "................",
    "....###.........",
    "....#o##########",
    "#####o#++++++++#",
    "#ooo#o#++++++++#",
    "#####o##########",
    "....#o#.........",
    "....###.........",
    "................",
    "................",
    "................",
    "................");

static const char art_enemy_a[] = ROWS16(
    "................",
    ".....######.....",
    "...##oooooo##...",
    "..#oooooooooo#..",
    ".#oo++oooo++oo#.",
    ".#o+##+oo+##+o#.",
    ".#oo++oooo++oo#.",
    ".#oooooooooooo#.",
    ".#oo########oo#.",
    ".#ooo#++++#ooo#.",
    ".#oooooooooooo#.",
    "..#oooooooooo#..",
    "..#o#oo##oo#o#..",
    ".#o#.#o##o#.#o#.",
    ".##..##..##..##.",
    "................");

static const char art_enemy_b[] = ROWS16(
    "................",
    ".....######.....",
    "...##oooooo##...",
    "..#oooooooooo#..",
    ".#oo++oooo++oo#.",
    ".#o+##+oo+##+o#.",
    ".#oo++oooo++oo#.",
    ".#oooooooooooo#.",
    ".#oo########oo#.",
    ".#ooo#++++#ooo#.",
    ".#oooooooooooo#.",
    "..#oooooooooo#..",
    "..#o#oo##oo#o#..",
    "..#o#o#..#o#o#..",
    "..##.##..##.##..",
    "................");

/* A row of the wrong width would silently shear the picture. */
#define CHECK_ART16(a) _Static_assert(sizeof(a) == 16 * 16 + 1, #a " must be 16 rows of 16 characters")
CHECK_ART16(art_grass);
CHECK_ART16(art_tree);
CHECK_ART16(art_rock);
CHECK_ART16(art_water);
CHECK_ART16(art_roof);
CHECK_ART16(art_house_wall);
CHECK_ART16(art_door);
CHECK_ART16(art_stairs);
CHECK_ART16(art_floor);
CHECK_ART16(art_wall);
CHECK_ART16(art_mat);
CHECK_ART16(art_locked);
CHECK_ART16(art_bars);
CHECK_ART16(art_switch_off);
CHECK_ART16(art_switch_on);
CHECK_ART16(art_rupee);
CHECK_ART16(art_big_rupee);
CHECK_ART16(art_key);
CHECK_ART16(art_sword_item);
CHECK_ART16(art_npc);
CHECK_ART16(art_hero_down);
CHECK_ART16(art_hero_up);
CHECK_ART16(art_hero_right);
CHECK_ART16(art_sword_up);
CHECK_ART16(art_sword_right);
CHECK_ART16(art_enemy_a);
CHECK_ART16(art_enemy_b);

/* Indexed by BLK_*; NULL is an all-zero block. */
static const char *const block_art[NUM_BLOCKS] = {
    0,
    art_grass,
    art_tree,
    art_rock,
    art_water,
    art_roof,
    art_house_wall,
    art_door,
    art_stairs,
    art_floor,
    art_wall,
    art_mat,
    art_locked,
    art_bars,
    art_switch_off,
    art_switch_on,
    art_rupee,
    art_big_rupee,
    art_key,
    art_sword_item,
    art_npc,
    art_hero_down,
    art_hero_up,
    art_hero_right,
    art_sword_up,
    art_sword_right,
    art_enemy_a,
    art_enemy_b,
};

#define ROWS8(a, b, c, d, e, f, g, h) a b c d e f g h

/* TILE_HEART0.. in order: hearts holding 0..4 quarters, rupee, key, sword, window border. */
static const char small_art[NUM_SMALL_TILES][65] = {
    ROWS8(".##.##..",
          "#..#..#.",
          "#.....#.",
          "#.....#.",
          ".#...#..",
          "..#.#...",
          "...#....",
          "........"),
    ROWS8(".##.##..",
          "#..#..#.",
          "#.....#.",
          "#oo...#.",
          ".#o..#..",
          "..#.#...",
          "...#....",
          "........"),
    ROWS8(".##.##..",
          "#oo#..#.",
          "#ooo..#.",
          "#ooo..#.",
          ".#oo.#..",
          "..#o#...",
          "...#....",
          "........"),
    ROWS8(".##.##..",
          "#oo#oo#.",
          "#ooooo#.",
          "#ooo..#.",
          ".#oo.#..",
          "..#o#...",
          "...#....",
          "........"),
    ROWS8(".##.##..",
          "#oo#oo#.",
          "#ooooo#.",
          "#ooooo#.",
          ".#ooo#..",
          "..#o#...",
          "...#....",
          "........"),
    ROWS8("...##...",
          "..#oo#..",
          ".#o++o#.",
          ".#o+oo#.",
          ".#o+oo#.",
          ".#oooo#.",
          "..#oo#..",
          "...##..."),
    ROWS8(".###....",
          "#o.o#...",
          "#o.o#...",
          ".###....",
          "..#o#...",
          "..#o##..",
          "..#o#...",
          "..###..."),
    ROWS8("......##",
          ".....#+#",
          "....#+#.",
          "#..#+#..",
          ".##+#...",
          "..##....",
          ".#.##...",
          "#...#..."),
    ROWS8("########",
          "oooooooo",
          "........",
          "........",
          "........",
          "........",
          "........",
          "........"),
};

/* 1bpp glyphs for ASCII 32..95, row 0 first; bit 7 is the leftmost pixel. */
static const uint8_t font[FONT_COUNT * 8] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /*   */
    0x00, 0x10, 0x10, 0x10, 0x10, 0x10, 0x00, 0x10,  /* ! */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* " */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* # */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* $ */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* % */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* & */
    0x00, 0x10, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00,  /* ' */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* ( */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* ) */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* '42' */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* + */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x20,  /* , */
    0x00, 0x00, 0x00, 0x00, 0x38, 0x00, 0x00, 0x00,  /* - */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,  /* . */
    0x00, 0x04, 0x04, 0x08, 0x10, 0x20, 0x40, 0x40,  /* '47' */
    0x00, 0x38, 0x44, 0x4C, 0x54, 0x64, 0x44, 0x38,  /* 0 */
    0x00, 0x10, 0x30, 0x10, 0x10, 0x10, 0x10, 0x38,  /* 1 */
    0x00, 0x38, 0x44, 0x04, 0x08, 0x10, 0x20, 0x7C,  /* 2 */
    0x00, 0x7C, 0x08, 0x10, 0x08, 0x04, 0x44, 0x38,  /* 3 */
    0x00, 0x08, 0x18, 0x28, 0x48, 0x7C, 0x08, 0x08,  /* 4 */
    0x00, 0x7C, 0x40, 0x78, 0x04, 0x04, 0x44, 0x38,  /* 5 */
    0x00, 0x18, 0x20, 0x40, 0x78, 0x44, 0x44, 0x38,  /* 6 */
    0x00, 0x7C, 0x04, 0x08, 0x10, 0x20, 0x20, 0x20,  /* 7 */
    0x00, 0x38, 0x44, 0x44, 0x38, 0x44, 0x44, 0x38,  /* 8 */
    0x00, 0x38, 0x44, 0x44, 0x3C, 0x04, 0x08, 0x30,  /* 9 */
    0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x10, 0x00,  /* : */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* ; */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* < */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* = */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* > */
    0x00, 0x38, 0x44, 0x04, 0x08, 0x10, 0x00, 0x10,  /* ? */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* @ */
    0x00, 0x38, 0x44, 0x44, 0x7C, 0x44, 0x44, 0x44,  /* A */
    0x00, 0x78, 0x44, 0x44, 0x78, 0x44, 0x44, 0x78,  /* B */
    0x00, 0x38, 0x44, 0x40, 0x40, 0x40, 0x44, 0x38,  /* C */
    0x00, 0x78, 0x44, 0x44, 0x44, 0x44, 0x44, 0x78,  /* D */
    0x00, 0x7C, 0x40, 0x40, 0x78, 0x40, 0x40, 0x7C,  /* E */
    0x00, 0x7C, 0x40, 0x40, 0x78, 0x40, 0x40, 0x40,  /* F */
    0x00, 0x38, 0x44, 0x40, 0x5C, 0x44, 0x44, 0x3C,  /* G */
    0x00, 0x44, 0x44, 0x44, 0x7C, 0x44, 0x44, 0x44,  /* H */
    0x00, 0x38, 0x10, 0x10, 0x10, 0x10, 0x10, 0x38,  /* I */
    0x00, 0x1C, 0x08, 0x08, 0x08, 0x48, 0x48, 0x30,  /* J */
    0x00, 0x44, 0x48, 0x50, 0x60, 0x50, 0x48, 0x44,  /* K */
    0x00, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x7C,  /* L */
    0x00, 0x44, 0x6C, 0x54, 0x54, 0x44, 0x44, 0x44,  /* M */
    0x00, 0x44, 0x44, 0x64, 0x54, 0x4C, 0x44, 0x44,  /* N */
    0x00, 0x38, 0x44, 0x44, 0x44, 0x44, 0x44, 0x38,  /* O */
    0x00, 0x78, 0x44, 0x44, 0x78, 0x40, 0x40, 0x40,  /* P */
    0x00, 0x38, 0x44, 0x44, 0x44, 0x54, 0x48, 0x34,  /* Q */
    0x00, 0x78, 0x44, 0x44, 0x78, 0x50, 0x48, 0x44,  /* R */
    0x00, 0x3C, 0x40, 0x40, 0x38, 0x04, 0x04, 0x78,  /* S */
    0x00, 0x7C, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,  /* T */
    0x00, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x38,  /* U */
    0x00, 0x44, 0x44, 0x44, 0x44, 0x44, 0x28, 0x10,  /* V */
    0x00, 0x44, 0x44, 0x44, 0x54, 0x54, 0x54, 0x28,  /* W */
    0x00, 0x44, 0x44, 0x28, 0x10, 0x28, 0x44, 0x44,  /* X */
    0x00, 0x44, 0x44, 0x28, 0x10, 0x10, 0x10, 0x10,  /* Y */
    0x00, 0x7C, 0x04, 0x08, 0x10, 0x20, 0x40, 0x7C,  /* Z */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* [ */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* backslash */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* ] */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* ^ */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* _ */
};

/* Colour index of each art character (a table: this runs for every pixel at boot). */
static const uint8_t shade[128] = {['+'] = 1, ['o'] = 2, ['#'] = 3};

/* One 8x8 tile from art whose rows are `stride` characters apart. */
static volatile uint8_t *art_to_tile(const char *art, uint8_t stride, volatile uint8_t *dst)
{
    const char *p;
    uint8_t row, col, lo, hi, v;
    for (row = 0; row < 8; row++) {
        lo = 0;
        hi = 0;
        p = art;
        for (col = 0; col < 8; col++) {
            v = shade[(uint8_t)*p++];
            lo <<= 1;
            hi <<= 1;
            if (v & 1)
                lo |= 1;
            if (v & 2)
                hi |= 1;
        }
        *dst++ = lo;
        *dst++ = hi;
        art += stride;
    }
    return dst;
}

/* Must run with the LCD off: it writes all of the tile data in one go. */
void gfx_load(void)
{
    volatile uint8_t *dst = VRAM_TILES;
    const char *art;
    const uint8_t *glyph;
    uint16_t n;
    uint8_t i, j;

    for (i = 0; i < NUM_BLOCKS; i++) {
        art = block_art[i];
        if (!art) {
            for (j = 0; j < 64; j++)
                *dst++ = 0;
            continue;
        }
        dst = art_to_tile(art, 16, dst);
        dst = art_to_tile(art + 8 * 16, 16, dst);
        dst = art_to_tile(art + 8, 16, dst);
        dst = art_to_tile(art + 8 * 16 + 8, 16, dst);
    }
    for (i = 0; i < NUM_SMALL_TILES; i++)
        dst = art_to_tile(small_art[i], 8, dst);

    /* Glyphs use colour 3 (both bit planes) so text is black on the blank window. */
    dst = VRAM_TILES + TILE_FONT * 16;
    glyph = font;
    for (n = 0; n < FONT_COUNT * 8; n++) {
        *dst++ = *glyph;
        *dst++ = *glyph++;
    }
}
