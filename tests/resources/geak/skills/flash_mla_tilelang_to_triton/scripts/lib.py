# written for the tests: a script beside a card, never read as one
