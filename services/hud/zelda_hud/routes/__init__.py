"""HTTP and websocket routes of the HUD; ``zelda_hud.app`` collects them."""
