/* Game Boy (DMG) hardware registers and bits used by the test world. */
#ifndef TESTWORLD_HW_H
#define TESTWORLD_HW_H

#include <stdint.h>

#define REG8(addr) (*(volatile uint8_t *)(addr))

#define rP1   REG8(0xFF00)
#define rIF   REG8(0xFF0F)
#define rNR52 REG8(0xFF26)
#define rLCDC REG8(0xFF40)
#define rSTAT REG8(0xFF41)
#define rSCY  REG8(0xFF42)
#define rSCX  REG8(0xFF43)
#define rLY   REG8(0xFF44)
#define rLYC  REG8(0xFF45)
#define rBGP  REG8(0xFF47)
#define rOBP0 REG8(0xFF48)
#define rOBP1 REG8(0xFF49)
#define rWY   REG8(0xFF4A)
#define rWX   REG8(0xFF4B)
#define rIE   REG8(0xFFFF)

#define LCDC_ON           0x80
#define LCDC_WIN_MAP_9C00 0x40
#define LCDC_WIN_ON       0x20
#define LCDC_TILES_8000   0x10
#define LCDC_OBJ_8X16     0x04
#define LCDC_OBJ_ON       0x02
#define LCDC_BG_ON        0x01

#define IE_VBLANK 0x01
#define IE_STAT   0x02
#define STAT_LYC_IRQ 0x40
#define LY_VBLANK 144

/* P1 bits 4/5 select which half of the joypad matrix reads back (0 = selected). */
#define P1_SELECT_DPAD    0x20
#define P1_SELECT_BUTTONS 0x10
#define P1_SELECT_NONE    0x30

#define VRAM_TILES ((volatile uint8_t *)0x8000)
#define BG_MAP     ((volatile uint8_t *)0x9800)
#define WIN_MAP    ((volatile uint8_t *)0x9C00)
#define MAP_STRIDE 32

#define OAM_FLAG_XFLIP 0x20
#define OAM_FLAG_YFLIP 0x40

#endif
