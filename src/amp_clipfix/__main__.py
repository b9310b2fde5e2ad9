from amp_clipfix.replay import main

if __name__ == "__main__":
    main()
